//! One benchmark workload, one run: the seeds' task-parallel programs (BOTS,
//! Cilk's heat, Drebes' block stencils, the task-based STREAM triad,
//! TaskInsight's reduction and histogram) on terroir, timed against their
//! sequential version in the same run and checked against its result.
//!
//! ```text
//! cargo run --release --example bots -- <workload|all> [--policy P|all] [--threads N]
//!                                       [--size S] [--order lifo|fifo] [--runs R]
//!                                       [--rayon] [--report DIR]
//! ```
//!
//! For every run it prints one line
//!
//! ```text
//! workload=<name> policy=<policy> order=<lifo|fifo> threads=<n> nodes=<n> size=<what> time_s=<t> seq_s=<t> speedup=<x> locality=<r> verified=true
//! ```
//!
//! where `time_s` and `seq_s` are the best of `--runs` runs (default 3) of
//! the terroir and the sequential version, each after the workload's
//! `setup` (outside the timing), and `locality` is the pool's
//! [locality ratio](terroir::PoolStats::locality_ratio) over those runs
//! (bytes of the tasks' declared data on the node that ran them, `-` for
//! workloads that place nothing; on one node it is trivially 1). `verified=true` means every run's result
//! equalled the sequential one; a wrong result prints `verified=false` and
//! the example exits with status 1. With `--rayon`, workloads that have a
//! rayon version also print a `runtime=rayon` line from a rayon pool of the
//! same size.
//!
//! - `--policy`: `flat`, `hierarchical`, `locality`, `strict-locality` or
//!   `all` (default: the pool default, `TERROIR_POLICY` or locality).
//! - `--size`: `small`, `default`, `large`, or the workload's own size
//!   parameter as a number (see each workload's module in
//!   `benches/workloads/`).
//! - `--order`: the order a worker takes jobs from its own deque
//!   ([`DequeOrder`]): `lifo` (depth-first, the default) or `fifo`
//!   (breadth-first).
//! - `--report DIR`: also run the workload on a one-worker pool and on the
//!   pool while recording, print the work-time-inflation report, and write
//!   `report.csv`, `report.svg` (and, with the `report` feature,
//!   `report.json` and `trace.json`) into `DIR`
//!   (one subdirectory per workload, policy and deque order, the baseline
//!   a one-worker pool with the same policy and order).

use std::process::exit;
use std::time::Instant;

use terroir::numa::Topology;
use terroir::report::InflationReport;
use terroir::{DequeOrder, Policy, ThreadPool, ThreadPoolBuilder};

#[path = "../benches/workloads/mod.rs"]
mod workloads;

use workloads::{Size, Workload, NAMES};

const USAGE: &str = "\
usage: bots <workload|all> [--policy P|all] [--threads N] [--size S]
            [--order lifo|fifo] [--runs R] [--rayon] [--report DIR]
workloads: fib nqueens sort sparselu strassen health uts alignment heat
           jacobi-2d seidel-2d stream-triad reduction histogram";

struct Args {
    workloads: Vec<String>,
    policies: Vec<Option<Policy>>,
    threads: usize,
    size: Size,
    order: DequeOrder,
    runs: usize,
    rayon: bool,
    report: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        workloads: Vec::new(),
        policies: vec![None],
        threads: 0,
        size: Size::Default,
        order: DequeOrder::Lifo,
        runs: 3,
        rayon: false,
        report: None,
    };
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                exit(0);
            }
            "--rayon" => a.rayon = true,
            "--policy" => {
                let v = value("--policy")?;
                a.policies = if v == "all" {
                    Policy::ALL.iter().copied().map(Some).collect()
                } else {
                    vec![Some(v.parse::<Policy>().map_err(|e| e.to_string())?)]
                };
            }
            "--threads" => {
                let v = value("--threads")?;
                a.threads = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("--threads takes a positive number, not {v:?}"))?;
            }
            "--size" => a.size = Size::parse(&value("--size")?)?,
            "--order" => {
                a.order = match value("--order")?.as_str() {
                    "lifo" => DequeOrder::Lifo,
                    "fifo" => DequeOrder::Fifo,
                    v => return Err(format!("--order takes lifo or fifo, not {v:?}")),
                }
            }
            "--runs" => {
                let v = value("--runs")?;
                a.runs = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("--runs takes a positive number, not {v:?}"))?;
            }
            "--report" => a.report = Some(value("--report")?),
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}")),
            "all" => a.workloads.extend(NAMES.iter().map(|s| s.to_string())),
            name if NAMES.contains(&name) => a.workloads.push(name.to_string()),
            name => {
                return Err(format!(
                    "unknown workload {name:?}; known: {}",
                    NAMES.join(", ")
                ))
            }
        }
    }
    if a.workloads.is_empty() {
        return Err("name a workload (or all)".into());
    }
    Ok(a)
}

/// Best time of `runs` runs of `run`, each after `setup`; every result
/// must be `want`.
fn best_of(w: &dyn Workload, runs: usize, want: u64, run: impl Fn() -> u64) -> (f64, bool) {
    let mut best = f64::INFINITY;
    let mut ok = true;
    for _ in 0..runs {
        w.setup();
        let t = Instant::now();
        let got = run();
        best = best.min(t.elapsed().as_secs_f64());
        ok &= got == want;
    }
    (best, ok)
}

fn report(w: &dyn Workload, pool: &ThreadPool, order: DequeOrder, dir: &str) -> Result<(), String> {
    // Pinned as `pool` is (whether, and how).
    let one = match pool.pinning() {
        Some(pinning) => ThreadPoolBuilder::new().pinning(pinning),
        None => ThreadPoolBuilder::new().pin(false),
    };
    let one = one
        .topology(pool.topology().clone())
        .policy(pool.policy())
        .deque_order(order)
        .num_threads(1)
        .build()
        .map_err(|e| e.to_string())?;
    w.setup();
    let (_, baseline) = one.record(|| w.terroir(&one));
    drop(one);
    w.setup();
    let (_, parallel) = pool.record(|| w.terroir(pool));
    let report = InflationReport::new(&baseline, &parallel);
    println!("{report}");
    let dir = format!(
        "{dir}/{}-{}-{}",
        w.name(),
        pool.policy().name(),
        order.name()
    );
    let files = report
        .write_all(&dir)
        .map_err(|e| format!("writing the report into {dir}: {e}"))?;
    for f in files {
        println!("wrote {}", f.display());
    }
    Ok(())
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("bots: {e}\n{USAGE}");
        exit(2)
    });
    let topology = Topology::detect().unwrap_or_else(|e| {
        eprintln!("bots: topology: {e}");
        exit(2)
    });
    let mut all_ok = true;
    for name in &args.workloads {
        let w = workloads::make(name, args.size, &topology).unwrap_or_else(|e| {
            eprintln!("bots: {name}: {e}");
            exit(2)
        });
        w.setup();
        let want = w.sequential();
        let (seq, _) = best_of(&*w, args.runs, want, || w.sequential());
        for &policy in &args.policies {
            let mut b = ThreadPoolBuilder::new()
                .num_threads(args.threads)
                .deque_order(args.order);
            if let Some(p) = policy {
                b = b.policy(p);
            }
            let pool = b.build().unwrap_or_else(|e| {
                eprintln!("bots: building the pool: {e}");
                exit(2)
            });
            pool.reset_stats();
            let (t, ok) = best_of(&*w, args.runs, want, || w.terroir(&pool));
            all_ok &= ok;
            // Bytes of declared data on the executing worker's node, over
            // all runs; "-" for workloads that declare no data.
            let ratio = pool
                .stats()
                .locality_ratio()
                .map_or_else(|| "-".to_string(), |r| format!("{r:.3}"));
            println!(
                "workload={} policy={} order={} threads={} nodes={} size={} time_s={t:.6} seq_s={seq:.6} speedup={:.2} locality={ratio} verified={ok}",
                w.name(),
                pool.policy().name(),
                args.order.name(),
                pool.current_num_threads(),
                pool.topology().nodes().len(),
                w.describe().replace(' ', ""),
                seq / t,
            );
            if let Some(dir) = &args.report {
                if let Err(e) = report(&*w, &pool, args.order, dir) {
                    eprintln!("bots: {e}");
                    exit(2);
                }
            }
        }
        if args.rayon {
            let threads = if args.threads == 0 {
                topology.pus().len()
            } else {
                args.threads
            };
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("rayon pool");
            w.setup();
            if w.rayon(&pool).is_some() {
                let (t, ok) = best_of(&*w, args.runs, want, || w.rayon(&pool).unwrap());
                all_ok &= ok;
                println!(
                    "workload={} runtime=rayon threads={threads} size={} time_s={t:.6} seq_s={seq:.6} speedup={:.2} verified={ok}",
                    w.name(),
                    w.describe().replace(' ', ""),
                    seq / t,
                );
            }
        }
    }
    if !all_ok {
        eprintln!("bots: a result differed from the sequential one");
        exit(1);
    }
}
