//! What recording costs: the same workloads run with `install` (recording
//! off), with `record_with(timestamps_only)` and with `record` (counters
//! too), on two workers, in the same run.
//!
//! - `fib_leaf20`: `fib(30)` with joins down to leaves of `fib(20)` or
//!   `fib(19)` (144 labelled tasks of ~17 µs on average here).
//! - `fib_leaf19`: `fib(29)` with leaves of `fib(19)` or `fib(18)` (144
//!   labelled tasks of ~10 µs: issue 20's target size).
//! - `fib_leaf12`: `fib(25)` with leaves of `fib(12)` (~0.5 µs): 377
//!   leaves... the worst case, tasks far below the 10 µs the report is for.
//! - `health`: 85 villages of 16,384 patients, 4 steps, a labelled task per
//!   village and step (~30 µs).
//!
//! Cost per task = (time recorded − time not recorded) ÷ tasks per
//! iteration (printed by the benchmark before it starts).
//!
//! ```text
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench recording
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use terroir::report::RecordOptions;
use terroir::{label, ThreadPool, ThreadPoolBuilder};

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

fn fib(n: u64, leaf: u64) -> u64 {
    if n <= leaf {
        return label("leaf", || fib_seq(black_box(n)));
    }
    let (a, b) = terroir::join(|| fib(n - 1, leaf), || fib(n - 2, leaf));
    a + b
}

#[path = "workloads/mix.rs"]
mod mix;
use mix::mix;

fn health(villages: &mut [Vec<u64>]) -> u64 {
    for step in 0..4u64 {
        terroir::scope(|s| {
            for v in villages.iter_mut() {
                s.spawn_labeled("village", move |_| {
                    for p in v.iter_mut() {
                        *p = mix(mix(*p ^ step));
                    }
                });
            }
        });
    }
    villages.iter().flatten().fold(0, |a, &x| a ^ x)
}

fn bench<W: Fn() -> u64 + Sync>(c: &mut Criterion, name: &str, pool: &ThreadPool, work: W) {
    let (_, rec) = pool.record(&work);
    eprintln!(
        "{name}: {} tasks per iteration ({} labelled)",
        rec.tasks.len(),
        rec.tasks
            .iter()
            .filter(|t| t.label.as_str() != "unlabelled")
            .count()
    );
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .sampling_mode(SamplingMode::Flat);
    g.bench_function("off", |b| b.iter(|| black_box(pool.install(&work))));
    let ts = RecordOptions::timestamps_only();
    g.bench_function("timestamps", |b| {
        b.iter(|| black_box(pool.record_with(&ts, &work).0))
    });
    g.bench_function("counters", |b| b.iter(|| black_box(pool.record(&work).0)));
    g.finish();
}

fn recording(c: &mut Criterion) {
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    bench(c, "fib_leaf20", &pool, || fib(30, 20));
    bench(c, "fib_leaf19", &pool, || fib(29, 19));
    bench(c, "fib_leaf12", &pool, || fib(25, 12));
    let villages = std::sync::Mutex::new(
        (0..85u64)
            .map(|i| {
                (0..16384u64)
                    .map(|j| mix(i * 16384 + j))
                    .collect::<Vec<u64>>()
            })
            .collect::<Vec<_>>(),
    );
    bench(c, "health", &pool, || health(&mut villages.lock().unwrap()));
}

criterion_group!(benches, recording);
criterion_main!(benches);
