//! `join` against chili's heartbeat-scheduled `join`, best of many runs in
//! one process: fib(32) with a join per call, and the sums of pointer-based
//! binary trees (parent-first and children-first layouts, see
//! `benches/workloads/tree.rs`) with a join per node. Each round times the
//! sequential recursion, terroir on one worker and on two, and chili on
//! two threads, and prints the best time of each (on a shared machine the
//! best is steadier than criterion's mean) and terroir ÷ chili:
//!
//! ```text
//! cargo run --release --example join_peers -- [--reps R] [--rounds N] [--depth D] [--only fib|tree]
//! ```
//!
//! One line per round:
//!
//! ```text
//! join_peers bench=<fib_32|tree_<nodes>_<layout>> round=<r> seq_ms=.. terroir1_ms=.. terroir2_ms=.. chili2_ms=.. ratio=<terroir2/chili2> steals=..
//! ```
//!
//! `terroir1_ms` minus `seq_ms` is what the joins cost on one worker (no
//! stealing); `steals` counts the two-worker pool's steals over the round,
//! so a round in which the second worker never helped shows.

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
}

fn args() -> Args {
    let mut a = Args {
        reps: 15,
        rounds: 3,
        depth: 20,
        only: None,
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

/// The best time of `reps` runs of `f`, in milliseconds; checks each
/// result against `expected`.
fn best(reps: usize, expected: u64, mut f: impl FnMut() -> u64) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        let got = black_box(f());
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(got, expected, "a runner computed a wrong result");
    }
    best
}

fn main() {
    let a = args();
    let wants = |b: &str| a.only.as_deref().is_none_or(|o| o == b);
    let one = terroir::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-worker pool");
    let two = terroir::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a two-worker pool");
    let chili = chili::ThreadPool::with_config(chili::Config {
        thread_count: std::num::NonZero::new(2),
        ..chili::Config::default()
    });
    let report = |bench: &str, round: usize, times: [f64; 4], steals: u64| {
        let [seq, t1, t2, c2] = times;
        println!(
            "join_peers bench={bench} round={round} seq_ms={seq:.3} terroir1_ms={t1:.3} \
             terroir2_ms={t2:.3} chili2_ms={c2:.3} ratio={:.3} steals={steals}",
            t2 / c2
        );
    };
    let steals = |pool: &terroir::ThreadPool| {
        let s = pool.stats();
        s.steals_same_l3 + s.steals_same_node + s.steals_remote.iter().map(|&(_, k)| k).sum::<u64>()
    };
    if wants("fib") {
        let n = 32;
        let expected = fib::<Seq>(n);
        for round in 0..a.rounds {
            two.reset_stats();
            let times = [
                best(a.reps, expected, || fib::<Seq>(black_box(n))),
                best(a.reps, expected, || {
                    one.install(|| fib::<Terroir>(black_box(n)))
                }),
                best(a.reps, expected, || {
                    two.install(|| fib::<Terroir>(black_box(n)))
                }),
                best(a.reps, expected, || {
                    fib_chili(black_box(n), &mut chili.scope())
                }),
            ];
            report("fib_32", round, times, steals(&two));
        }
    }
    if wants("tree") {
        for layout in Layout::ALL {
            let tree = build_tree(a.depth, layout);
            let n = nodes(a.depth);
            let expected = n * (n - 1) / 2;
            let bench = format!("tree_{n}_{}", layout.name());
            for round in 0..a.rounds {
                two.reset_stats();
                let times = [
                    best(a.reps, expected, || tree_sum::<Seq>(&tree)),
                    best(a.reps, expected, || {
                        one.install(|| tree_sum::<Terroir>(&tree))
                    }),
                    best(a.reps, expected, || {
                        two.install(|| tree_sum::<Terroir>(&tree))
                    }),
                    best(a.reps, expected, || {
                        tree_sum_chili(&tree, &mut chili.scope())
                    }),
                ];
                report(&bench, round, times, steals(&two));
            }
        }
    }
}
