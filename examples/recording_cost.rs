//! What recording costs, measured so that a shared machine's drifting
//! speed cancels out: each round times the same workload not recorded,
//! recorded with timestamps only and recorded with counters (the default
//! options), in an order that rotates from round to round, and the
//! overhead is the median over rounds of each recorded time over the
//! unrecorded one of the same round. (`benches/recording.rs` measures the
//! same workloads with criterion, one variant after the other, which a
//! host whose speed moves by 2× within a minute cannot resolve.)
//!
//! ```text
//! cargo run --release --example recording_cost -- [--rounds R]
//! ```
//!
//! Workloads (two workers; each labelled task is what the report is for):
//!
//! - `fib_leaf19`: `fib(29)` with joins down to leaves of `fib(19)` or
//!   `fib(18)`, each leaf a labelled task (~10 µs here: issue 20's size);
//! - `fib_leaf20`: the same with leaves of `fib(20)` or `fib(19)` (~17 µs);
//! - `fib_leaf12`: `fib(25)` with leaves of `fib(12)` (~0.5 µs, far below
//!   what recording is for: the worst case).
//!
//! Each recording holds 8 runs of the workload (5–10 ms), and `empty`
//! measures what starting and stopping a recording costs on its own.
//!
//! Output: a line per round, then per workload
//! `recording bench=<name> tasks=<labelled> task_us=<mean> rounds=<R>
//! timestamps_median=<x> counters_median=<x> counters_min=<x>
//! counters_max=<x> method="<how counters were read>"`, where `x` is the
//! recorded time over the unrecorded one (1.05: 5 % overhead).

use std::hint::black_box;
use std::time::Instant;

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

/// The median, smallest and largest of `v` (not empty).
fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() {
    let mut rounds = 15usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&r| r > 0)
                    .unwrap_or_else(|| panic!("--rounds takes a positive integer"))
            }
            other => panic!("unknown argument {other:?} (expected --rounds R)"),
        }
    }
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    // What starting and stopping a recording costs, on its own.
    measure(&pool, "empty", rounds, || 0);
    for (name, n, leaf) in [
        ("fib_leaf19", 29, 19),
        ("fib_leaf20", 30, 20),
        ("fib_leaf12", 25, 12),
    ] {
        measure(&pool, name, rounds, || {
            (0..RUNS_PER_RECORDING).map(|_| fib(n, leaf)).sum()
        });
    }
}

/// Runs of a workload per recording (about 5-10 ms of recording for the
/// fib workloads), so that starting and stopping the recording (opening
/// the counters: `empty` above) is not counted as a per-task cost.
const RUNS_PER_RECORDING: u64 = 8;

fn measure(pool: &ThreadPool, name: &str, rounds: usize, work: impl Fn() -> u64 + Sync) {
    let (_, rec) = pool.record(&work);
    let labelled: Vec<_> = rec
        .tasks
        .iter()
        .filter(|t| t.label.as_str() == "leaf")
        .collect();
    let task_us = labelled
        .iter()
        .map(|t| t.end_ns.saturating_sub(t.start_ns))
        .sum::<u64>() as f64
        / labelled.len().max(1) as f64
        / 1e3;
    // Enough repetitions per timing for ~20 ms.
    let t = Instant::now();
    black_box(pool.install(&work));
    let reps = (0.02 / t.elapsed().as_secs_f64().max(1e-6)).clamp(1.0, 1000.0) as usize;
    let ts = RecordOptions::timestamps_only();
    let counters = RecordOptions::default();
    let mut method = String::new();
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        t.elapsed().as_secs_f64()
    };
    let (mut ts_ratio, mut c_ratio) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut out = [0.0f64; 3];
        for k in 0..3 {
            let i = (k + round) % 3;
            out[i] = match i {
                0 => time(&mut || {
                    black_box(pool.install(&work));
                }),
                1 => time(&mut || {
                    black_box(pool.record_with(&ts, &work).0);
                }),
                _ => time(&mut || {
                    let (r, rec) = pool.record_with(&counters, &work);
                    black_box(r);
                    method = format!(
                        "{}; {} of {} labelled tasks counted; {}",
                        rec.counter_method.sampling,
                        rec.counter_method.counted,
                        rec.counter_method.labelled,
                        rec.counter_method.read
                    );
                }),
            };
        }
        let [off, t, c] = out;
        println!(
            "recording bench={name} round={round} off_ms={:.3} timestamps_ms={:.3} counters_ms={:.3}",
            off * 1e3 / reps as f64,
            t * 1e3 / reps as f64,
            c * 1e3 / reps as f64
        );
        ts_ratio.push(t / off);
        c_ratio.push(c / off);
    }
    let (tm, _, _) = spread(ts_ratio);
    let (cm, lo, hi) = spread(c_ratio);
    println!(
        "recording bench={name} tasks={} task_us={task_us:.1} rounds={rounds} timestamps_median={tm:.3} \
         counters_median={cm:.3} counters_min={lo:.3} counters_max={hi:.3} method=\"{method}\"",
        labelled.len()
    );
}
