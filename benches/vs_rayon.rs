//! terroir against rayon on the workloads rayon can express
//! ([`workloads::RAYON_NAMES`]: fib, nqueens, sort, strassen, heat, uts,
//! reduction, histogram) and on the loop workloads
//! ([`workloads::LOOP_NAMES`]: heat, jacobi-2d, stream-triad, reduction,
//! histogram) written with parallel iterators, same inputs, same thread
//! count (the machine's), same run, with the sequential version as the
//! baseline; and the parallel loops themselves: the dispatch cost of an
//! empty loop, a map-sum and the STREAM triad over 16 Mi `f64`.
//!
//! ```text
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench vs_rayon
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench vs_rayon -- fib
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench vs_rayon -- loops/
//! ```
//!
//! Workload ids: `<workload>/sequential`, `<workload>/terroir` (hand
//! split: `join`, `scope` or placed spawns; default policy, hierarchical
//! unless `TERROIR_POLICY` says otherwise), `<workload>/rayon`,
//! `<workload>/terroir-iter` and `<workload>/rayon-iter` (the same
//! parallel-iterator code under each prelude). Loop ids:
//! `loops/empty-<n>/{terroir,rayon}` (inside the pool),
//! `loops/map-sum-16Mi/{terroir,rayon}`,
//! `loops/triad-16Mi/{terroir-spawn,terroir-iter,rayon-iter}`. Every
//! runner's result is checked against the sequential one before it is
//! timed. Criterion times one contender after the other; for ratios on a
//! shared machine, prefer `cargo run --release --example loops`, which
//! interleaves them.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use terroir::ThreadPoolBuilder;

#[path = "workloads/mod.rs"]
mod workloads;

#[path = "harness/mod.rs"]
mod harness;

fn vs_rayon(c: &mut Criterion) {
    let size = harness::size();
    let topo = harness::topology();
    let threads = topo.pus().len();
    let terroir = ThreadPoolBuilder::new()
        .topology(topo.clone())
        .num_threads(threads)
        .build()
        .expect("terroir pool");
    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("rayon pool");
    let mut names: Vec<&str> = workloads::RAYON_NAMES.to_vec();
    names.extend(
        workloads::LOOP_NAMES
            .iter()
            .filter(|n| !workloads::RAYON_NAMES.contains(n)),
    );
    for name in names {
        let (w, want) = harness::build(name, size, &topo);
        let mut g = harness::group(c, &*w);
        harness::bench(&mut g, &*w, "sequential", want, || w.sequential());
        harness::bench(&mut g, &*w, "terroir", want, || w.terroir(&terroir));
        if workloads::RAYON_NAMES.contains(&name) {
            harness::bench(&mut g, &*w, "rayon", want, || {
                w.rayon(&rayon)
                    .unwrap_or_else(|| panic!("{name} is in RAYON_NAMES but has no rayon version"))
            });
        }
        if workloads::LOOP_NAMES.contains(&name) {
            let missing = || panic!("{name} is in LOOP_NAMES but has no iterator version");
            harness::bench(&mut g, &*w, "terroir-iter", want, || {
                w.terroir_iter(&terroir).unwrap_or_else(missing)
            });
            harness::bench(&mut g, &*w, "rayon-iter", want, || {
                w.rayon_iter(&rayon).unwrap_or_else(missing)
            });
        }
        g.finish();
    }
    loops(c, &terroir, &rayon);
}

/// The parallel loops: dispatch cost, map-sum, triad.
fn loops(c: &mut Criterion, terroir: &terroir::ThreadPool, rayon: &rayon::ThreadPool) {
    let mut g = c.benchmark_group("loops");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for n in [1_000usize, 10_000, 100_000, 1_000_000, 10_000_000] {
        g.bench_function(format!("empty-{n}/terroir"), |b| {
            b.iter_custom(|iters| {
                terroir.install(|| {
                    use terroir::prelude::*;
                    let t = Instant::now();
                    for _ in 0..iters {
                        (0..n).into_par_iter().for_each(|_| ());
                    }
                    t.elapsed()
                })
            })
        });
        g.bench_function(format!("empty-{n}/rayon"), |b| {
            b.iter_custom(|iters| {
                rayon.install(|| {
                    use rayon::prelude::*;
                    let t = Instant::now();
                    for _ in 0..iters {
                        (0..n).into_par_iter().for_each(|_| ());
                    }
                    t.elapsed()
                })
            })
        });
    }
    let n = 16 << 20;
    let v: Vec<f64> = (0..n).map(|i| (i % 1000) as f64).collect();
    g.bench_function("map-sum-16Mi/terroir", |b| {
        b.iter(|| {
            terroir.install(|| {
                use terroir::prelude::*;
                black_box(v.par_iter().map(|x| x * 1.5).sum::<f64>())
            })
        })
    });
    g.bench_function("map-sum-16Mi/rayon", |b| {
        b.iter(|| {
            rayon.install(|| {
                use rayon::prelude::*;
                black_box(v.par_iter().map(|x| x * 1.5).sum::<f64>())
            })
        })
    });
    drop(v);
    let topo = terroir.topology().clone();
    let w = workloads::stream::new(workloads::Size::Param(n), &topo).expect("stream-triad");
    w.setup();
    let want = w.sequential();
    harness::bench(&mut g, &*w, "triad-16Mi/terroir-spawn", want, || {
        w.terroir(terroir)
    });
    harness::bench(&mut g, &*w, "triad-16Mi/terroir-iter", want, || {
        w.terroir_iter(terroir)
            .expect("stream-triad has an iterator version")
    });
    harness::bench(&mut g, &*w, "triad-16Mi/rayon-iter", want, || {
        w.rayon_iter(rayon)
            .expect("stream-triad has an iterator version")
    });
    g.finish();
}

criterion_group!(benches, vs_rayon);
criterion_main!(benches);
