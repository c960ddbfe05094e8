//! `join` against chili's heartbeat-scheduled `join`, best of many runs in
//! one process: fib(32) with a join per call, and the sums of pointer-based
//! binary trees (parent-first and children-first layouts, see
//! `benches/workloads/tree.rs`) with a join per node. Each round times the
//! sequential recursion, terroir on one worker and on two, and chili on one
//! thread and on two, and prints the best time of each (on a shared machine
//! the best is steadier than criterion's mean) and terroir ÷ chili on two:
//!
//! ```text
//! cargo run --release --example join_peers -- [--reps R] [--rounds N] [--depth D]
//!     [--only fib|tree] [--layout parent-first|children-first]
//!     [--runner seq|terroir1|terroir2|chili1|chili2]
//! ```
//!
//! One line per round:
//!
//! ```text
//! join_peers bench=<fib_32|tree_<nodes>_<layout>> round=<r> seq_us=.. terroir1_us=.. terroir2_us=.. chili1_us=.. chili2_us=.. ratio=<terroir2/chili2> steals=..
//! ```
//!
//! `terroir1_us` minus `seq_us` is what the joins cost on one worker (no
//! stealing), and `chili1_us` minus `seq_us` what chili's cost on its one
//! thread; `steals` counts the two-worker pool's steals over the round, so
//! a round in which the second worker never helped shows. `--runner` times
//! one runner alone (with `--reps 1 --rounds 1`, for
//! `valgrind --tool=callgrind`: instruction counts of one run).
//!
//! `--trace` adds, after each workload's rounds, one run of the two-worker
//! pool under a recording (timestamps only) and prints what its workers
//! did: time in tasks, looking for work and idle, the steals, and how long
//! each wait for work lasted before the worker got work again (the time a
//! thief waits between asking and receiving, plus its search):
//!
//! ```text
//! join_peers trace bench=.. wall_us=.. steals=.. worker=<w> work_us=.. search_us=.. idle_us=.. waits=.. wait_p50_us=.. wait_p90_us=.. wait_max_us=..
//! ```

use std::hint::black_box;
use std::time::Instant;

#[path = "../benches/workloads/mod.rs"]
mod workloads;

use workloads::fib::{fib, fib_chili, Seq, Terroir};
use workloads::tree::{build_tree, nodes, tree_sum, tree_sum_chili, Layout};

struct Args {
    reps: usize,
    rounds: usize,
    depth: u32,
    only: Option<String>,
    layout: Option<Layout>,
    runner: Option<String>,
    trace: bool,
}

fn args() -> Args {
    let mut a = Args {
        reps: 15,
        rounds: 3,
        depth: 20,
        only: None,
        layout: None,
        runner: None,
        trace: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |what: &str| it.next().unwrap_or_else(|| panic!("{what} needs a value"));
        match arg.as_str() {
            "--reps" => a.reps = value("--reps").parse().expect("--reps: a number"),
            "--rounds" => a.rounds = value("--rounds").parse().expect("--rounds: a number"),
            "--depth" => {
                a.depth = value("--depth")
                    .parse()
                    .expect("--depth: a number, 1 to 26")
            }
            "--only" => a.only = Some(value("--only")),
            "--layout" => {
                let v = value("--layout");
                a.layout = Some(
                    Layout::ALL
                        .into_iter()
                        .find(|l| l.name() == v)
                        .unwrap_or_else(|| {
                            panic!("--layout: parent-first or children-first, not {v:?}")
                        }),
                )
            }
            "--trace" => a.trace = true,
            "--runner" => {
                let v = value("--runner");
                assert!(
                    RUNNERS.contains(&v.as_str()),
                    "--runner: one of {RUNNERS:?}, not {v:?}"
                );
                a.runner = Some(v);
            }
            other => panic!("unknown argument {other:?}"),
        }
    }
    assert!(
        (1..=26).contains(&a.depth),
        "--depth: 1 to 26, not {}",
        a.depth
    );
    assert!(
        a.reps > 0 && a.rounds > 0,
        "--reps and --rounds: at least 1"
    );
    a
}

/// The best time of `reps` runs of `f`, in microseconds; checks each
/// result against `expected`.
fn best(reps: usize, expected: u64, mut f: impl FnMut() -> u64) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        let got = black_box(f());
        best = best.min(t.elapsed().as_secs_f64() * 1e6);
        assert_eq!(got, expected, "a runner computed a wrong result");
    }
    best
}

/// The runners, in the order of the printed line.
const RUNNERS: [&str; 5] = ["seq", "terroir1", "terroir2", "chili1", "chili2"];

/// One run of `work` on `pool` under a recording (timestamps only): what
/// each worker did, on one line each (see the module docs).
fn trace(bench: &str, pool: &terroir::ThreadPool, work: impl FnOnce() -> u64 + Send) {
    let (_, rec) = pool.record_with(&terroir::report::RecordOptions::timestamps_only(), work);
    let us = |ns: u64| ns as f64 / 1e3;
    for (w, t) in rec.workers.iter().enumerate() {
        let mut waits: Vec<u64> = rec
            .waits
            .iter()
            .filter(|x| x.worker == w)
            .map(|x| x.end_ns - x.start_ns)
            .collect();
        waits.sort_unstable();
        let q = |p: f64| {
            waits
                .get(((waits.len().max(1) - 1) as f64 * p) as usize)
                .copied()
                .unwrap_or(0)
        };
        println!(
            "join_peers trace bench={bench} wall_us={:.1} steals={} worker={w} work_us={:.1} \
             search_us={:.1} idle_us={:.1} waits={} wait_p50_us={:.2} wait_p90_us={:.2} wait_max_us={:.2}",
            us(rec.wall_ns),
            rec.steals.len(),
            us(t.work_ns),
            us(t.overhead_ns),
            us(t.idle_ns),
            waits.len(),
            us(q(0.5)),
            us(q(0.9)),
            us(waits.last().copied().unwrap_or(0)),
        );
    }
}

fn main() {
    let a = args();
    let wants = |b: &str| a.only.as_deref().is_none_or(|o| o == b);
    let runs = |r: &str| a.runner.as_deref().is_none_or(|o| o == r);
    let terroir = |n| {
        terroir::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .expect("a terroir pool")
    };
    let chili = |n| {
        chili::ThreadPool::with_config(chili::Config {
            thread_count: std::num::NonZero::new(n),
            ..chili::Config::default()
        })
    };
    let (one, two) = (terroir(1), terroir(2));
    let (chili1, chili2) = (chili(1), chili(2));
    let report = |bench: &str, round: usize, times: &[Option<f64>], steals: u64| {
        let mut line = format!("join_peers bench={bench} round={round}");
        for (name, t) in RUNNERS.iter().zip(times) {
            if let Some(t) = t {
                line += &format!(" {name}_us={t:.1}");
            }
        }
        if let (Some(t2), Some(c2)) = (times[2], times[4]) {
            line += &format!(" ratio={:.3}", t2 / c2);
        }
        println!("{line} steals={steals}");
    };
    let steals = |pool: &terroir::ThreadPool| {
        let s = pool.stats();
        s.steals_same_l3 + s.steals_same_node + s.steals_remote.iter().map(|&(_, k)| k).sum::<u64>()
    };
    // Times each wanted runner of one round.
    let round = |expected: u64,
                 seq: &dyn Fn() -> u64,
                 ter: &dyn Fn(&terroir::ThreadPool) -> u64,
                 chi: &dyn Fn(&chili::ThreadPool) -> u64| {
        let mut times = [None; 5];
        let mut time = |i: usize, f: &mut dyn FnMut() -> u64| {
            if runs(RUNNERS[i]) {
                times[i] = Some(best(a.reps, expected, f));
            }
        };
        time(0, &mut || seq());
        time(1, &mut || ter(&one));
        time(2, &mut || ter(&two));
        time(3, &mut || chi(&chili1));
        time(4, &mut || chi(&chili2));
        times
    };
    if wants("fib") {
        let n = 32;
        let expected = fib::<Seq>(n);
        for r in 0..a.rounds {
            two.reset_stats();
            let times = round(
                expected,
                &|| fib::<Seq>(black_box(n)),
                &|pool| pool.install(|| fib::<Terroir>(black_box(n))),
                &|pool| fib_chili(black_box(n), &mut pool.scope()),
            );
            report("fib_32", r, &times, steals(&two));
        }
        if a.trace {
            trace("fib_32", &two, || fib::<Terroir>(black_box(n)));
        }
    }
    if wants("tree") {
        for layout in Layout::ALL {
            if a.layout.is_some_and(|l| l != layout) {
                continue;
            }
            let tree = build_tree(a.depth, layout);
            let n = nodes(a.depth);
            let expected = n * (n - 1) / 2;
            let bench = format!("tree_{n}_{}", layout.name());
            for r in 0..a.rounds {
                two.reset_stats();
                let times = round(
                    expected,
                    &|| tree_sum::<Seq>(&tree),
                    &|pool| pool.install(|| tree_sum::<Terroir>(&tree)),
                    &|pool| tree_sum_chili(&tree, &mut pool.scope()),
                );
                report(&bench, r, &times, steals(&two));
            }
            if a.trace {
                trace(&bench, &two, || tree_sum::<Terroir>(&tree));
            }
        }
    }
}
