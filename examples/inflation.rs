//! Work-time inflation, measured: runs a workload on a one-worker pool (the
//! sequential-equivalent baseline) and on the parallel pool, prints the
//! [`InflationReport`] and writes `report.csv`, `report.svg` and, with the
//! `report` feature, `report.json` and `trace.json` (open it in
//! <https://ui.perfetto.dev>) into `--out`. Counters need the
//! `counters` feature (without it the report names each as unavailable).
//!
//! ```text
//! cargo run --release --features report,counters --example inflation -- fib [--threads N] [--out DIR]
//! cargo run --release --example inflation -- health
//! cargo run --release --example inflation -- inflating
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
//!
//! Options: `--threads N` (default: one per allowed CPU), `--out DIR`
//! (default `target/inflation`), `--timestamps-only` (no counters).

use std::hint::black_box;
use std::process::exit;

use terroir::pool::NodeVec;
use terroir::report::InflationReport;
use terroir::report::RecordOptions;
use terroir::{label, Place, ThreadPoolBuilder};

const USAGE: &str =
    "usage: inflation <fib|health|inflating> [--threads N] [--out DIR] [--timestamps-only]";

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

fn main() {
    let mut args = std::env::args().skip(1);
    let workload = args.next().unwrap_or_else(|| fail(USAGE));
    let mut threads = None;
    let mut out = std::path::PathBuf::from("target/inflation");
    let mut options = RecordOptions::default();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => {
                let v = args
                    .next()
                    .unwrap_or_else(|| fail("--threads needs a value"));
                threads = Some(
                    v.parse::<usize>()
                        .ok()
                        .filter(|&n| n > 0)
                        .unwrap_or_else(|| {
                            fail(&format!("--threads takes a positive number, not {v:?}"))
                        }),
                );
            }
            "--out" => {
                out = args
                    .next()
                    .unwrap_or_else(|| fail("--out needs a directory"))
                    .into()
            }
            "--timestamps-only" => options = RecordOptions::timestamps_only(),
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
    let one = ThreadPoolBuilder::new()
        .topology(pool.topology().clone())
        .pin(pool.is_pinned())
        .num_threads(1)
        .build()
        .unwrap_or_else(|e| fail(&format!("cannot build the one-worker pool: {e}")));
    let nodes: Vec<_> = pool.topology().nodes().iter().map(|n| n.id()).collect();
    let run = || match workload.as_str() {
        "fib" => fib(34),
        "health" => health(&nodes),
        "inflating" => inflating(),
        other => fail(&format!("unknown workload {other:?}\n{USAGE}")),
    };
    let (expected, baseline) = one.record_with(&options, run);
    let (got, parallel) = pool.record_with(&options, run);
    if got != expected {
        fail(&format!(
            "the parallel result {got} differs from the one-worker result {expected}"
        ));
    }
    let report = InflationReport::new(&baseline, &parallel);
    println!("{report}");
    match report.write_all(&out) {
        Ok(files) => {
            for f in files {
                println!("wrote {}", f.display());
            }
        }
        Err(e) => fail(&e.to_string()),
    }
}
