//! terroir against rayon on the workloads rayon can express
//! ([`workloads::RAYON_NAMES`]: fib, nqueens, sort, strassen, heat, uts,
//! reduction, histogram), same inputs, same thread count (the machine's),
//! same run, with the sequential version as the baseline.
//!
//! ```text
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench vs_rayon
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench vs_rayon -- fib
//! ```
//!
//! Ids: `<workload>/sequential`, `<workload>/terroir` (default policy,
//! hierarchical unless `TERROIR_POLICY` says otherwise) and
//! `<workload>/rayon`. Both versions of a workload share its recursion and
//! cutoffs; only the runtime differs. Every runner's result is checked
//! against the sequential one before it is timed.

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
    for name in workloads::RAYON_NAMES {
        let (w, want) = harness::build(name, size, &topo);
        let mut g = harness::group(c, &*w);
        harness::bench(&mut g, &*w, "sequential", want, || w.sequential());
        harness::bench(&mut g, &*w, "terroir", want, || w.terroir(&terroir));
        harness::bench(&mut g, &*w, "rayon", want, || {
            w.rayon(&rayon)
                .unwrap_or_else(|| panic!("{name} is in RAYON_NAMES but has no rayon version"))
        });
        g.finish();
    }
}

criterion_group!(benches, vs_rayon);
criterion_main!(benches);
