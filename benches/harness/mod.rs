//! What `benches/policies.rs` and `benches/vs_rayon.rs` share: building the
//! workloads, checking every runner's result before timing it, and the
//! criterion settings that keep a full run within minutes on 2 cores.

use std::time::Duration;

use criterion::{BatchSize, BenchmarkGroup, Criterion};
use terroir::numa::Topology;

use crate::workloads::{self, Size, Workload};

/// The size from `TERROIR_BENCH_SIZE` (default: `Default`); an invalid
/// value stops the benchmark with a message naming it.
pub fn size() -> Size {
    Size::from_env().unwrap_or_else(|e| panic!("{e}"))
}

/// The machine's topology.
pub fn topology() -> Topology {
    Topology::detect().unwrap_or_else(|e| panic!("topology discovery: {e}"))
}

/// Builds `name` at `size` and computes its sequential result.
pub fn build(name: &str, size: Size, topo: &Topology) -> (Box<dyn Workload>, u64) {
    let w = workloads::make(name, size, topo).unwrap_or_else(|e| panic!("{name}: {e}"));
    w.setup();
    let want = w.sequential();
    (w, want)
}

/// A criterion group for one workload: few samples, short warm-up and
/// measurement (the workloads run for milliseconds to a few hundred
/// milliseconds each; `TERROIR_BENCH_SIZE=large` for longer ones).
pub fn group<'a>(
    c: &'a mut Criterion,
    w: &dyn Workload,
) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(w.name());
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g
}

/// Times `run` under the id `id`, after checking once that it gives `want`
/// (a wrong answer stops the benchmark: it is a failure, not a data
/// point). `setup` runs before every iteration, outside the timing.
pub fn bench(
    g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    w: &dyn Workload,
    id: &str,
    want: u64,
    run: impl Fn() -> u64,
) {
    w.setup();
    let got = run();
    assert_eq!(
        got,
        want,
        "{} ({}) under {id}: result differs from the sequential one",
        w.name(),
        w.describe()
    );
    g.bench_function(id, |b| {
        b.iter_batched(|| w.setup(), |()| run(), BatchSize::PerIteration)
    });
}
