//! A tour of terroir on this machine: what it sees, whether it can pin
//! threads, and what fork-join costs under each stealing policy compared
//! with sequential code and with rayon.
//!
//! It prints:
//!
//! 1. the topology a default pool schedules on (`ThreadPoolBuilder::new()`):
//!    NUMA nodes, L3 cache groups, processing units and the node distance
//!    matrix, and where they come from (`numa::TopologySource`): this machine's
//!    sysfs, or, on a machine without NUMA information, every allowed CPU
//!    as one node, with the reason;
//! 2. the CPUs this process may run on ([`allowed_cpus`]);
//! 3. whether binding works: a thread binds itself to each allowed CPU in
//!    turn ([`bind_current_thread`]) and checks that
//!    [`current_cpu_and_node`] reports that CPU;
//! 4. the "NUMA doctor" ([`Doctor`]): transparent huge pages, automatic
//!    NUMA balancing, the cpuset and cgroup CPU quota against the nodes'
//!    CPUs, whether threads and memory bind, the machine's load, whether it
//!    is a virtual machine, `perf_event_paranoid`, each with what it means
//!    for measurements;
//! 5. for each pool, its thread count and whether its workers are pinned;
//! 6. a table: `fib(N)` with a join on every call (leaves at `n < 2`) and
//!    the sum of a pointer-based binary tree of `2^D - 1` boxed nodes with a
//!    join on every node (allocated parent first, see
//!    `benches/workloads/tree.rs`), each run sequentially, under every
//!    [`Policy`] of [`Policy::ALL`] and under rayon, best of 5 runs, in one
//!    process. Each line gives the time, the speed relative to sequential
//!    (`sequential time / this time`) and relative to rayon (`rayon time /
//!    this time`); above 1.00x is faster. Every parallel result is checked
//!    against the sequential one (exit code 1 if they differ).
//!
//! Run it with:
//!
//! ```text
//! cargo run --release --example tour
//! cargo run --release --example tour -- --fib 30 --tree-depth 22 --threads 2
//! ```
//!
//! Options: `--fib N` (default 32), `--tree-depth D` (default 20, i.e.
//! 1,048,575 nodes; at most 28), `--threads N` (default: terroir's and
//! rayon's own defaults, one worker per allowed CPU unless
//! `TERROIR_NUM_THREADS` / `RAYON_NUM_THREADS` say otherwise). The
//! terroir pools are pinned exactly when binding works.

use std::fmt::Display;
use std::process::exit;
use std::time::{Duration, Instant};

use terroir::numa::{allowed_cpus, bind_current_thread, current_cpu_and_node, CpuSet};
use terroir::report::Doctor;
use terroir::{Policy, ThreadPoolBuilder};

const RUNS: usize = 5;

const USAGE: &str = "\
usage: tour [--fib N] [--tree-depth D] [--threads N]

  --fib N          fib(N) with a join per call (default 32, at most 93)
  --tree-depth D   binary tree of 2^D - 1 boxed nodes (default 20, 1..=28)
  --threads N      worker threads for terroir and rayon (default: their own)";

struct Args {
    fib: u64,
    tree_depth: u32,
    threads: Option<usize>,
}

fn parse_args() -> Result<Args, String> {
    fn value<T: std::str::FromStr>(
        flag: &str,
        it: &mut impl Iterator<Item = String>,
        ok: impl Fn(&T) -> bool,
        expected: &str,
    ) -> Result<T, String> {
        let text = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match text.parse::<T>() {
            Ok(v) if ok(&v) => Ok(v),
            _ => Err(format!("{flag} {text:?}: expected {expected}")),
        }
    }
    let mut args = Args {
        fib: 32,
        tree_depth: 20,
        threads: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--fib" => args.fib = value(&arg, &mut it, |&n| n <= 93, "an integer in 0..=93")?,
            "--tree-depth" => {
                args.tree_depth = value(
                    &arg,
                    &mut it,
                    |d| (1..=28).contains(d),
                    "an integer in 1..=28",
                )?
            }
            "--threads" => {
                args.threads = Some(value(&arg, &mut it, |&n| n >= 1, "a positive integer")?)
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

// The workloads of the benchmarks, shared: fib and the tree, with the
// sequential, terroir and rayon `join`s.
#[path = "../benches/workloads/mod.rs"]
mod workloads;

use workloads::fib::{fib, Rayon, Seq as Sequential, Terroir};
use workloads::tree::{build_tree, tree_sum, Layout, Node};

/// Binds a fresh thread to each allowed CPU in turn and checks with
/// `getcpu` that it runs there. Returns the number of CPUs checked.
fn check_binding() -> Result<usize, String> {
    std::thread::spawn(|| {
        let cpus = allowed_cpus().map_err(|e| format!("cannot read the allowed CPUs: {e}"))?;
        let mut checked = 0;
        for cpu in cpus.iter() {
            bind_current_thread(&CpuSet::from_iter([cpu]))
                .map_err(|e| format!("cannot bind to CPU {cpu}: {e}"))?;
            let (now, _) =
                current_cpu_and_node().map_err(|e| format!("getcpu after binding: {e}"))?;
            if now != cpu {
                return Err(format!("bound to CPU {cpu} but getcpu reports CPU {now}"));
            }
            checked += 1;
        }
        Ok(checked)
    })
    .join()
    .unwrap_or_else(|_| Err("the binding thread panicked".into()))
}

/// Runs `f` [`RUNS`] times; returns the best time. Exits with code 1 if a
/// result differs from `expected`.
fn best_of(label: &str, expected: u64, mut f: impl FnMut() -> u64) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..RUNS {
        let start = Instant::now();
        let got = std::hint::black_box(f());
        best = best.min(start.elapsed());
        if got != expected {
            eprintln!("error: {label} computed {got}, sequential computed {expected}");
            exit(1);
        }
    }
    best
}

fn fail(what: impl Display) -> ! {
    eprintln!("error: {what}");
    exit(1);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `d` in milliseconds with at least three significant digits.
fn fmt_ms(d: Duration) -> String {
    let v = ms(d);
    let decimals = if v >= 1.0 {
        2
    } else if v >= 0.1 {
        3
    } else {
        4
    };
    format!("{v:.decimals$} ms")
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("error: {e}\n\n{USAGE}");
        exit(2);
    });

    // 1. Topology: what a default pool uses (this machine's, or the
    // single-node fallback on a machine without NUMA information).
    let topo = ThreadPoolBuilder::new()
        .num_threads(1)
        .pin(false)
        .build()
        .unwrap_or_else(|e| fail(format_args!("cannot build a default pool: {e}")))
        .topology()
        .clone();
    println!("topology source: {}", topo.source());
    println!("topology: {topo}");

    // 2. Allowed CPUs.
    match allowed_cpus() {
        Ok(cpus) => println!("allowed CPUs: {cpus} ({} CPUs)", cpus.len()),
        Err(e) => println!("allowed CPUs: cannot read them: {e}"),
    }

    // 3. Binding.
    let binding_works = match check_binding() {
        Ok(n) => {
            println!("binding: works (checked {n} CPUs)");
            true
        }
        Err(e) => {
            println!("binding: does not work: {e} (pools will not be pinned)");
            false
        }
    };

    // 4. The NUMA doctor: settings that bend measurements on this machine.
    println!();
    print!("{}", Doctor::check(Some(&topo)));

    // Workloads and their sequential results.
    let fib_n = args.fib;
    let depth = args.tree_depth;
    let nodes = (1u64 << depth) - 1;
    let build_start = Instant::now();
    let tree = build_tree(depth, Layout::ParentFirst);
    println!(
        "\ntree: {nodes} boxed nodes of {} bytes ({:.1} MiB before allocator overhead), built \
         in {:.1} ms",
        std::mem::size_of::<Node>(),
        (nodes * std::mem::size_of::<Node>() as u64) as f64 / f64::from(1 << 20),
        ms(build_start.elapsed())
    );
    let tree = &*tree;
    let fib_label = format!("fib({fib_n})");
    let tree_label = format!("tree_sum({nodes})");
    let fib_expected = fib::<Sequential>(fib_n);
    let tree_expected = tree_sum::<Sequential>(tree);
    assert_eq!(tree_expected, nodes * (nodes - 1) / 2);

    // (runner, fib time, tree time)
    let mut results: Vec<(String, Duration, Duration)> = Vec::new();
    results.push((
        "sequential".into(),
        best_of("sequential fib", fib_expected, || {
            fib::<Sequential>(std::hint::black_box(fib_n))
        }),
        best_of("sequential tree_sum", tree_expected, || {
            tree_sum::<Sequential>(std::hint::black_box(tree))
        }),
    ));

    // 5. Pools and measurements.
    println!();
    for &policy in Policy::ALL {
        let runner = format!("terroir/{policy}");
        let pool = ThreadPoolBuilder::new()
            .topology(topo.clone())
            .num_threads(args.threads.unwrap_or(0))
            .policy(policy)
            .pin(binding_works)
            .build()
            .unwrap_or_else(|e| fail(format_args!("cannot build the {runner} pool: {e}")));
        let n = pool.current_num_threads();
        let cpus: Vec<String> = (0..n)
            .filter_map(|i| pool.worker_cpus(i))
            .map(|c| c.to_string())
            .collect();
        println!(
            "{runner} pool: {n} threads, pinned: {} (worker CPUs {})",
            pool.pinning().map_or("no", |p| p.name()),
            cpus.join(" ")
        );
        let fib_t = best_of(&format!("{runner} fib"), fib_expected, || {
            pool.install(|| fib::<Terroir>(std::hint::black_box(fib_n)))
        });
        let tree_t = best_of(&format!("{runner} tree_sum"), tree_expected, || {
            pool.install(|| tree_sum::<Terroir>(std::hint::black_box(tree)))
        });
        results.push((runner, fib_t, tree_t));
    }
    let rayon_pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()
        .unwrap_or_else(|e| fail(format_args!("cannot build the rayon pool: {e}")));
    println!(
        "rayon pool: {} threads, pinned: no",
        rayon_pool.current_num_threads()
    );
    results.push((
        "rayon".into(),
        best_of("rayon fib", fib_expected, || {
            rayon_pool.install(|| fib::<Rayon>(std::hint::black_box(fib_n)))
        }),
        best_of("rayon tree_sum", tree_expected, || {
            rayon_pool.install(|| tree_sum::<Rayon>(std::hint::black_box(tree)))
        }),
    ));

    // 6. The table.
    println!(
        "\nbest of {RUNS} runs; Nx seq = sequential time / this time, Nx rayon = rayon time / \
         this time (above 1.00x is faster)"
    );
    let seq = &results[0];
    let ray = results.last().expect("rayon row");
    let (seq_fib, seq_tree, ray_fib, ray_tree) = (seq.1, seq.2, ray.1, ray.2);
    let width = results.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let label_width = fib_label.len().max(tree_label.len());
    for (label, pick, seq_t, ray_t) in [
        (&fib_label, 0, seq_fib, ray_fib),
        (&tree_label, 1, seq_tree, ray_tree),
    ] {
        for (runner, fib_t, tree_t) in &results {
            let t = if pick == 0 { *fib_t } else { *tree_t };
            println!(
                "{label:<label_width$}   {runner:<width$}   {:>12}   ({:.2}x seq, {:.2}x rayon)",
                fmt_ms(t),
                seq_t.as_secs_f64() / t.as_secs_f64(),
                ray_t.as_secs_f64() / t.as_secs_f64(),
            );
        }
    }
}
