//! Work-time inflation, measured: runs a workload after a warm-up run on a
//! one-worker pool (the sequential-equivalent baseline) and on the parallel
//! pool, prints the [`InflationReport`] and writes `report.txt`,
//! `report.csv`, `report.svg` and, with the `report` feature, `report.json`
//! and `trace.json` (open it in <https://ui.perfetto.dev>) into `--out`.
//! Counters need the `counters` feature (without it the report names each
//! as unavailable).
//!
//! ```text
//! cargo run --release --features report,counters --example inflation -- fib [--threads N] [--out DIR]
//! cargo run --release --example inflation -- health --repeat 5 --baseline each
//! cargo run --release --example inflation -- inflating
//! cargo run --release --example inflation -- million
//! ```
//!
//! Workloads:
//!
//! - `fib`: `fib(34)` with joins down to a cutoff of 20, each leaf a task
//!   labelled `fib-leaf` computing `fib(20)` sequentially (~10 µs here).
//! - `health`: the Health-like village tree of `examples/locality.rs`, in
//!   small: each village's step is a task labelled `village`, spawned with
//!   a data place on the village's patients.
//! - `inflating`: tasks labelled `inflating` whose work is deliberately 3x
//!   larger on every worker but worker 0 — a stand-in for a remote-memory
//!   penalty; the report should find an inflation near 3 on the tasks the
//!   other workers ran.
//! - `million`: 2^20 labelled leaves of a join tree (~1 µs each), recorded
//!   with timestamps only; prints the size of each file written and the
//!   process's peak memory (the SVG aggregates, the trace is streamed).
//!
//! Options: `--threads N` (default: one per allowed CPU), `--out DIR`
//! (default `target/inflation`), `--timestamps-only` (no counters),
//! `--sampling every|auto|K` (which tasks' counters are read: every task,
//! the default budget, or one in K), `--repeat N` (runs of each side; the
//! report shows the median run and the spread), `--baseline first|each`
//! (one worker on the first node, or on each node in turn), `--no-warm-up`.
//! Every run's result is checked against the others (exit status 1).

use std::hint::black_box;
use std::process::exit;

use std::sync::Mutex;

use terroir::pool::NodeVec;
use terroir::report::{
    BaselinePlacement, CounterSampling, InflationReport, MeasureOptions, RecordOptions,
};
use terroir::{label, Place, ThreadPoolBuilder};

const USAGE: &str = "usage: inflation <fib|health|inflating|million> [--threads N] [--out DIR] \
                     [--timestamps-only] [--sampling every|auto|K] [--repeat N] \
                     [--baseline first|each] [--no-warm-up]";

fn fail(msg: &str) -> ! {
    eprintln!("inflation: {msg}");
    exit(2)
}

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

fn fib(n: u64) -> u64 {
    if n <= 20 {
        return label("fib-leaf", || fib_seq(black_box(n)));
    }
    let (a, b) = terroir::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

#[path = "../benches/workloads/mix.rs"]
mod mix;
use mix::mix;

/// 85 villages of 4,096 patients, 10 steps; returns a checksum.
fn health(nodes: &[terroir::numa::NodeId]) -> u64 {
    let villages: Vec<NodeVec<u64>> = (0..85)
        .map(|i| {
            let node = nodes[i % nodes.len()];
            NodeVec::from_fn_on(4096, node, |j| mix((i * 4096 + j) as u64))
                .unwrap_or_else(|e| fail(&format!("allocating village {i}: {e}")))
        })
        .collect();
    let mut villages = villages;
    for step in 0..10u64 {
        terroir::scope(|s| {
            for v in villages.iter_mut() {
                let place = Place::data(v);
                s.spawn_on_labeled(&place, "village", move |_| {
                    for p in v.iter_mut() {
                        let mut x = *p ^ step;
                        for _ in 0..4 {
                            x = mix(x);
                        }
                        *p = x;
                    }
                });
            }
        });
    }
    villages
        .iter()
        .flat_map(|v| v.iter())
        .fold(0, |a, &x| mix(a ^ x))
}

fn inflating() -> u64 {
    terroir::scope(|s| {
        for _ in 0..400 {
            s.spawn(|_| {
                let factor = if terroir::current_thread_index() == Some(0) {
                    1
                } else {
                    3
                };
                label("inflating", || {
                    let mut x = 0u64;
                    for i in 0..20_000 * factor {
                        x = black_box(x.wrapping_mul(31).wrapping_add(i));
                    }
                    black_box(x);
                });
            });
        }
    });
    400
}

/// A join tree of `n` labelled leaves of ~1 µs.
fn leaves(n: u64) -> u64 {
    if n == 1 {
        return label("leaf", || {
            let mut x = n;
            for i in 0..100u64 {
                x = black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            x & 1
        });
    }
    let (a, b) = terroir::join(|| leaves(n / 2), || leaves(n - n / 2));
    a + b
}

/// This process's peak resident memory, bytes.
fn peak_rss() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    ru.ru_maxrss as u64 * 1024
}

fn main() {
    let mut args = std::env::args().skip(1);
    let workload = args.next().unwrap_or_else(|| fail(USAGE));
    let mut threads = None;
    let mut out = std::path::PathBuf::from("target/inflation");
    let mut options = MeasureOptions::default();
    if workload == "million" {
        options.record = RecordOptions::timestamps_only();
    }
    let number = |flag: &str, v: Option<String>| -> usize {
        let v = v.unwrap_or_else(|| fail(&format!("{flag} needs a value")));
        v.parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| fail(&format!("{flag} takes a positive number, not {v:?}")))
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => threads = Some(number("--threads", args.next())),
            "--repeat" => options.repeat = number("--repeat", args.next()),
            "--out" => {
                out = args
                    .next()
                    .unwrap_or_else(|| fail("--out needs a directory"))
                    .into()
            }
            "--timestamps-only" => options.record = RecordOptions::timestamps_only(),
            "--no-warm-up" => options.warm_up = false,
            "--sampling" => {
                let v = args
                    .next()
                    .unwrap_or_else(|| fail("--sampling needs every, auto or a number"));
                options.record.sampling = match v.as_str() {
                    "every" => CounterSampling::EveryTask,
                    "auto" => CounterSampling::default(),
                    k => CounterSampling::Every(number("--sampling", Some(k.to_string())) as u32),
                };
            }
            "--baseline" => {
                options.baseline = match args.next().as_deref() {
                    Some("first") => BaselinePlacement::FirstNode,
                    Some("each") => BaselinePlacement::EachNode,
                    other => fail(&format!("--baseline takes first or each, not {other:?}")),
                }
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            _ => fail(&format!("unknown argument {a:?}\n{USAGE}")),
        }
    }
    let mut builder = ThreadPoolBuilder::new();
    if let Some(t) = threads {
        builder = builder.num_threads(t);
    }
    let pool = builder
        .build()
        .unwrap_or_else(|e| fail(&format!("cannot build the pool: {e}")));
    let nodes: Vec<_> = pool.topology().nodes().iter().map(|n| n.id()).collect();
    let results = Mutex::new(Vec::new());
    let run = || {
        let r = match workload.as_str() {
            "fib" => fib(34),
            "health" => health(&nodes),
            "inflating" => inflating(),
            "million" => leaves(1 << 20),
            other => fail(&format!("unknown workload {other:?}\n{USAGE}")),
        };
        results.lock().unwrap().push(r);
        r
    };
    let (_, report) = InflationReport::measure_with(&pool, &options, run)
        .unwrap_or_else(|e| fail(&format!("cannot build the one-worker pool: {e}")));
    let results = results.into_inner().unwrap();
    if results.windows(2).any(|w| w[0] != w[1]) {
        fail(&format!("the runs computed different results: {results:?}"));
    }
    println!("{report}");
    match report.write_all(&out) {
        Ok(files) => {
            for f in files {
                let size = std::fs::metadata(&f).map_or(0, |m| m.len());
                println!("wrote {} ({size} bytes)", f.display());
            }
        }
        Err(e) => fail(&e.to_string()),
    }
    println!(
        "tasks recorded: {} parallel, {} baseline; peak resident memory {:.1} MiB",
        report.parallel_run.tasks.len(),
        report
            .baseline_runs
            .iter()
            .map(|r| r.tasks.len())
            .sum::<usize>(),
        peak_rss() as f64 / f64::from(1 << 20)
    );
}
