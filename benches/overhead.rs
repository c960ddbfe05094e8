//! Fork-join overhead: terroir against rayon and against plain sequential
//! code, on two threads, in the same run.
//!
//! Workloads (each one criterion group, so the runners print together):
//!
//! - `fib_32`: `fib(32)` with a `join` on every call (leaves at `n < 2`),
//!   about 3.5 M joins of almost no work each: this measures the cost of a
//!   join and little else.
//! - `tree_sum_<nodes>_<layout>`: the sum of a pointer-based binary tree
//!   of 1,023, 1,048,575 and 16,777,215 boxed nodes (depths 10, 20, 24), a
//!   `join` per node, each allocated parent first and children first (see
//!   `workloads/tree.rs`: the layout decides the large trees' times more
//!   than any scheduler). At 1,023 nodes an iteration takes microseconds,
//!   so the cost of `install` (handing the job to a pool worker, waking
//!   it, waiting for the result) weighs as much as the joins; at 2^24
//!   (~540 MB of nodes, built once per layout) it is join overhead plus
//!   pointer chasing through memory far larger than the caches. This is
//!   the tree of chili's benchmark, closer to what users do than an
//!   implicit array.
//!
//! - `spawn_tree_18`: a scope in which every task spawns two tasks, down to
//!   2^18 leaves (524,287 spawns): the cost of a heap-allocated task frame
//!   (allocation, queueing, the scope's counter), which `join` never pays.
//!   No sequential runner: there is nothing to spawn; a one-thread terroir
//!   pool shows the cost of a spawn without stealing or waking.
//!
//! - `spawn_on_10000`: 10,000 empty placed tasks in one scope (a node, a
//!   data, a worker and a temporal place, under `Locality`), on one and on
//!   two workers, beside as many unplaced spawns: what routing a place
//!   costs a spawn.
//!
//! Runners, for each workload:
//!
//! - `sequential`: the same recursion with the join replaced by two calls;
//! - `terroir/<policy>` for each policy of [`Policy::ALL`]: a pool built
//!   with `num_threads(2)` and that policy, entered with `pool.install`;
//! - `rayon`: `rayon::ThreadPoolBuilder::new().num_threads(2)`, entered with
//!   `pool.install`;
//! - `chili` (fork-join workloads only): chili 0.2, a `join` with
//!   heartbeat scheduling (Acar et al., PLDI 2018, after Spice): a pool of
//!   two threads (the calling thread and one worker), entered with
//!   `pool.scope()`; its `join` passes the scope down the recursion, so it
//!   has a recursion of its own with the same shape.
//!
//! The three implementations share one generic recursion (see [`Joiner`]),
//! so they differ only in what `join` does. Before benchmarking, every runner
//! computes each workload once and the result is asserted equal to the
//! sequential one.
//!
//! Run it with:
//!
//! ```text
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench overhead
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench overhead -- fib_32   # one group
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench overhead -- tree_sum_1048575   # both layouts
//! ```
//!
//! Sample sizes and measurement times are set per group so that the whole
//! run takes a couple of minutes on a 2-core machine.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use terroir::Policy;

const FIB_N: u64 = 32;
/// Tree depths: 1,023, 1,048,575 and 16,777,215 nodes.
const TREE_DEPTHS: [u32; 3] = [10, 20, 24];
const THREADS: usize = 2;

#[path = "workloads/mod.rs"]
mod workloads;

// The sequential, terroir and rayon `join`s, shared with the suite's
// recursive workloads, and fib itself.
use workloads::fib::{fib, fib_chili, Joiner, Rayon, Seq as Sequential, Terroir};
use workloads::tree::{build_tree, nodes, tree_sum, tree_sum_chili, Layout, Node};

fn chili_pool() -> chili::ThreadPool {
    chili::ThreadPool::with_config(chili::Config {
        thread_count: std::num::NonZero::new(THREADS),
        ..chili::Config::default()
    })
}

fn terroir_pool(policy: Policy) -> terroir::ThreadPool {
    terroir::ThreadPoolBuilder::new()
        .num_threads(THREADS)
        .policy(policy)
        .build()
        .unwrap_or_else(|e| panic!("cannot build terroir pool ({policy}): {e}"))
}

fn rayon_pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(THREADS)
        .build()
        .expect("cannot build rayon pool")
}

/// Benchmarks one workload under every runner, as one criterion group.
///
/// `work` is the workload written against a [`Joiner`]; `configure` sets
/// the group's sample size and times.
fn bench_workload<W>(
    c: &mut Criterion,
    name: &str,
    pools: &Pools,
    configure: impl FnOnce(&mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>),
    work: W,
) where
    W: Workload,
{
    // Check every runner against the sequential result once.
    let expected = work.run::<Sequential>();
    for (policy, pool) in &pools.terroir {
        let got = pool.install(|| work.run::<Terroir>());
        assert_eq!(got, expected, "{name}: terroir/{policy} disagrees");
    }
    let got = pools.rayon.install(|| work.run::<Rayon>());
    assert_eq!(got, expected, "{name}: rayon disagrees");
    let got = work.run_chili(&mut pools.chili.scope());
    assert_eq!(got, expected, "{name}: chili disagrees");

    let mut group = c.benchmark_group(name);
    configure(&mut group);
    group.bench_function("sequential", |b| {
        b.iter(|| black_box(work.run::<Sequential>()))
    });
    for (policy, pool) in &pools.terroir {
        group.bench_function(format!("terroir/{policy}"), |b| {
            b.iter(|| black_box(pool.install(|| work.run::<Terroir>())))
        });
    }
    group.bench_function("rayon", |b| {
        b.iter(|| black_box(pools.rayon.install(|| work.run::<Rayon>())))
    });
    group.bench_function("chili", |b| {
        b.iter(|| black_box(work.run_chili(&mut pools.chili.scope())))
    });
    group.finish();
}

/// A workload that can run under any [`Joiner`].
trait Workload: Sync {
    fn run<J: Joiner>(&self) -> u64;
    /// The same with chili (whose `join` passes its scope down).
    fn run_chili(&self, s: &mut chili::Scope<'_>) -> u64;
}

struct Fib(u64);
impl Workload for Fib {
    fn run<J: Joiner>(&self) -> u64 {
        fib::<J>(black_box(self.0))
    }
    fn run_chili(&self, s: &mut chili::Scope<'_>) -> u64 {
        fib_chili(black_box(self.0), s)
    }
}

struct TreeSum<'a>(&'a Node);
impl Workload for TreeSum<'_> {
    fn run<J: Joiner>(&self) -> u64 {
        tree_sum::<J>(black_box(self.0))
    }
    fn run_chili(&self, s: &mut chili::Scope<'_>) -> u64 {
        tree_sum_chili(black_box(self.0), s)
    }
}

struct Pools {
    terroir: Vec<(Policy, terroir::ThreadPool)>,
    rayon: rayon::ThreadPool,
    chili: chili::ThreadPool,
}

fn overhead(c: &mut Criterion) {
    let pools = Pools {
        terroir: Policy::ALL.iter().map(|&p| (p, terroir_pool(p))).collect(),
        rayon: rayon_pool(),
        chili: chili_pool(),
    };

    // ~3.5 M joins per iteration; tens of ms per iteration in parallel.
    bench_workload(
        c,
        &format!("fib_{FIB_N}"),
        &pools,
        |g| {
            g.sample_size(30)
                .warm_up_time(Duration::from_secs(1))
                .measurement_time(Duration::from_secs(5))
                .sampling_mode(SamplingMode::Flat);
        },
        Fib(FIB_N),
    );

    // Each depth in both layouts (see `workloads/tree.rs`): microseconds
    // per iteration at 2^10 (criterion's defaults, shorter times), tens to
    // hundreds of ms at 2^24 (few samples, flat sampling; ~540 MB of
    // nodes, one layout at a time).
    for depth in TREE_DEPTHS {
        for layout in Layout::ALL {
            let tree = build_tree(depth, layout);
            bench_workload(
                c,
                &format!("tree_sum_{}_{}", nodes(depth), layout.name()),
                &pools,
                |g| match depth {
                    0..=12 => {
                        g.sample_size(100)
                            .warm_up_time(Duration::from_secs(1))
                            .measurement_time(Duration::from_secs(3));
                    }
                    13..=20 => {
                        g.sample_size(30)
                            .warm_up_time(Duration::from_secs(1))
                            .measurement_time(Duration::from_secs(4))
                            .sampling_mode(SamplingMode::Flat);
                    }
                    _ => {
                        g.sample_size(15)
                            .warm_up_time(Duration::from_secs(2))
                            .measurement_time(Duration::from_secs(10))
                            .sampling_mode(SamplingMode::Flat);
                    }
                },
                TreeSum(&tree),
            );
        }
    }
}

const SPAWN_DEPTH: u32 = 18;

fn spawn_tree_terroir<'s>(s: &terroir::Scope<'s>, depth: u32, leaves: &'s AtomicU64) {
    if depth == 0 {
        leaves.fetch_add(1, Ordering::Relaxed);
        return;
    }
    s.spawn(move |s| spawn_tree_terroir(s, depth - 1, leaves));
    s.spawn(move |s| spawn_tree_terroir(s, depth - 1, leaves));
}

fn spawn_tree_rayon<'s>(s: &rayon::Scope<'s>, depth: u32, leaves: &'s AtomicU64) {
    if depth == 0 {
        leaves.fetch_add(1, Ordering::Relaxed);
        return;
    }
    s.spawn(move |s| spawn_tree_rayon(s, depth - 1, leaves));
    s.spawn(move |s| spawn_tree_rayon(s, depth - 1, leaves));
}

/// `spawn_tree_18`: scoped spawns only (see the module docs).
fn spawns(c: &mut Criterion) {
    let terroir: Vec<(Policy, terroir::ThreadPool)> =
        Policy::ALL.iter().map(|&p| (p, terroir_pool(p))).collect();
    let rayon = rayon_pool();
    let expected = 1u64 << SPAWN_DEPTH;
    let mut group = c.benchmark_group(format!("spawn_tree_{SPAWN_DEPTH}"));
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .sampling_mode(SamplingMode::Flat);
    for (policy, pool) in &terroir {
        group.bench_function(format!("terroir/{policy}"), |b| {
            b.iter(|| {
                let leaves = AtomicU64::new(0);
                pool.scope(|s| spawn_tree_terroir(s, SPAWN_DEPTH, &leaves));
                assert_eq!(leaves.into_inner(), expected);
            })
        });
    }
    // One worker: the cost of a spawn (frame, deque, scope counter) with
    // no stealing or waking to blur it.
    let single = terroir::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("cannot build a one-thread terroir pool");
    group.bench_function("terroir-1-thread/hierarchical", |b| {
        b.iter(|| {
            let leaves = AtomicU64::new(0);
            single.scope(|s| spawn_tree_terroir(s, SPAWN_DEPTH, &leaves));
            assert_eq!(leaves.into_inner(), expected);
        })
    });
    group.bench_function("rayon", |b| {
        b.iter(|| {
            let leaves = AtomicU64::new(0);
            rayon.scope(|s| spawn_tree_rayon(s, SPAWN_DEPTH, &leaves));
            assert_eq!(leaves.into_inner(), expected);
        })
    });
    group.finish();
}

/// Placed spawns per iteration of `spawn_on_*`.
const PLACED_SPAWNS: usize = 10_000;

/// `spawn_on_10000`: the cost of a placed spawn (routing the place,
/// preparing the task's frame on the target node, the push), one scope of
/// 10,000 empty tasks per iteration, under `Locality` on a one-worker
/// pool (no stealing or waking to blur it) and on two workers. `spawn` is
/// the unplaced reference.
fn placed_spawns(c: &mut Criterion) {
    let pools: Vec<(&str, terroir::ThreadPool)> = [("1-thread", 1), ("2-threads", THREADS)]
        .into_iter()
        .map(|(name, n)| {
            let pool = terroir::ThreadPoolBuilder::new()
                .num_threads(n)
                .policy(Policy::Locality)
                .build()
                .expect("cannot build a terroir pool");
            (name, pool)
        })
        .collect();
    let node = pools[0].1.topology().nodes()[0].id();
    let data = terroir::pool::NodeVec::from_elem_on(0u8, 1 << 16, node)
        .expect("cannot place a vector on node 0");
    let mut group = c.benchmark_group(format!("spawn_on_{PLACED_SPAWNS}"));
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sampling_mode(SamplingMode::Flat);
    for (name, pool) in &pools {
        let places = [
            ("node", pool.node(0).expect("node 0")),
            ("data", terroir::Place::data(&data)),
            ("worker", pool.worker(0).expect("worker 0")),
            ("after", terroir::Place::after(7u32)),
        ];
        let count = AtomicU64::new(0);
        group.bench_function(format!("{name}/spawn"), |b| {
            b.iter(|| {
                pool.scope(|s| {
                    for _ in 0..PLACED_SPAWNS {
                        s.spawn(|_| {
                            count.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                })
            })
        });
        for (kind, place) in &places {
            group.bench_function(format!("{name}/{kind}"), |b| {
                b.iter(|| {
                    pool.scope(|s| {
                        for _ in 0..PLACED_SPAWNS {
                            s.spawn_on(place, |_| {
                                count.fetch_add(1, Ordering::Relaxed);
                            });
                        }
                    })
                })
            });
        }
        // Every scope ran all its spawns (none at all when a filter
        // skipped this group: `-- tree_sum_1048575` used to fail here).
        assert_eq!(count.into_inner() % PLACED_SPAWNS as u64, 0);
    }
    group.finish();
}

criterion_group!(benches, overhead, spawns, placed_spawns);
criterion_main!(benches);
