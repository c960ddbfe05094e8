//! terroir's parallel loops against rayon's, A/B interleaved in one run:
//! the dispatch cost of an empty loop, a map-sum and the STREAM triad, with
//! the spread over rounds (the machine may be shared: compare ratios from
//! the same round, not absolute times).
//!
//! ```text
//! cargo run --release --example loops -- [--rounds R] [--threads N] [--pin true|false]
//!                   [--only empty|outside|mapsum|triad|tree|split|sort]
//! ```
//!
//! Each round times every contender once, in an order that rotates from
//! round to round, and prints
//!
//! ```text
//! loops bench=<name> n=<n> round=<r> <contender>_us=<t> ... ratio=<terroir/rayon>
//! ```
//!
//! then a summary line per benchmark:
//! `loops bench=<name> n=<n> rounds=<R> ratio_median=<x> ratio_min=<x> ratio_max=<x>`
//! (for the triad also `vs_spawn_*`: the iterator version against the
//! hand-split spawn version of `benches/workloads/stream.rs`).
//!
//! `--pin false` builds the terroir pools unpinned, like rayon's threads
//! (on a machine shared with other load, pinned workers cannot move away
//! from a busy CPU).
//!
//! - `empty`: `(0..n).into_par_iter().for_each(|_| ())` for n = 10^3 …
//!   10^7, called inside the pool (`install`), the time per loop;
//! - `outside`: the same from the main thread, on each runtime's global
//!   pool (entering the pool included);
//! - `mapsum`: `v.par_iter().map(|x| x * 1.5).sum::<f64>()` over 16 Mi
//!   `f64`;
//! - `triad`: the STREAM triad over 16 Mi `f64` per array, 10 repetitions
//!   per call: terroir's hand-split spawn version (64 placed chunk tasks
//!   per repetition), terroir's iterator version and rayon's iterator
//!   version (`a.par_iter_mut().zip(b).zip(c).for_each(..)`), each checked
//!   against the sequential result;
//! - `tree`, `split`, `sort`: rayon-demo's benchmarks of `walk_tree_*`
//!   (a 100 000-node tree summed), `par_split` (a million bytes) and
//!   `par_sort_unstable` (random, few keys, mostly ascending), each inside
//!   its pool.

use std::hint::black_box;
use std::time::Instant;

use terroir::numa::Topology;
use terroir::ThreadPoolBuilder;

#[path = "../benches/workloads/mod.rs"]
mod workloads;

use workloads::Size;

struct Args {
    rounds: usize,
    threads: usize,
    only: Option<String>,
    pin: bool,
}

fn args() -> Args {
    let mut a = Args {
        rounds: 7,
        threads: Topology::detect().map(|t| t.pus().len()).unwrap_or(2),
        only: None,
        pin: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |what: &str| it.next().unwrap_or_else(|| panic!("{what} needs a value"));
        match arg.as_str() {
            "--rounds" => a.rounds = value("--rounds").parse().expect("--rounds: a number"),
            "--threads" => a.threads = value("--threads").parse().expect("--threads: a number"),
            "--only" => a.only = Some(value("--only")),
            "--pin" => a.pin = value("--pin").parse().expect("--pin: true or false"),
            other => panic!("unknown argument {other:?}"),
        }
    }
    a
}

/// Median, min and max.
fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// Times `f` run `reps` times; microseconds per run.
fn per_run(reps: usize, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    t.elapsed().as_secs_f64() * 1e6 / reps as f64
}

/// Runs the contenders of one round in an order rotated by `round`.
fn rotated<const N: usize>(round: usize, f: [&mut dyn FnMut() -> f64; N]) -> [f64; N] {
    let mut out = [0.0; N];
    for k in 0..N {
        let i = (k + round) % N;
        out[i] = f[i]();
    }
    out
}

fn summary(bench: &str, n: usize, ratios: Vec<f64>, extra: &str) {
    let rounds = ratios.len();
    let (med, lo, hi) = spread(ratios);
    println!(
        "loops bench={bench} n={n} rounds={rounds} ratio_median={med:.3} ratio_min={lo:.3} ratio_max={hi:.3}{extra}"
    );
}

fn main() {
    let args = args();
    let wants = |b: &str| args.only.as_deref().is_none_or(|o| o == b);
    let threads = args.threads;
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("terroir pool");
    let rpool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("rayon pool");
    println!(
        "loops threads={threads} rounds={} pin={}",
        args.rounds, args.pin
    );

    if wants("empty") {
        for n in [1_000usize, 10_000, 100_000, 1_000_000, 10_000_000] {
            let reps = 20_000;
            let mut ratios = Vec::new();
            for round in 0..args.rounds {
                let [t, r] = rotated(
                    round,
                    [
                        &mut || {
                            pool.install(|| {
                                per_run(reps, || {
                                    use terroir::prelude::*;
                                    (0..n).into_par_iter().for_each(|_| ());
                                })
                            })
                        },
                        &mut || {
                            rpool.install(|| {
                                per_run(reps, || {
                                    use rayon::prelude::*;
                                    (0..n).into_par_iter().for_each(|_| ());
                                })
                            })
                        },
                    ],
                );
                println!("loops bench=empty n={n} round={round} terroir_us={t:.4} rayon_us={r:.4} ratio={:.3}", t / r);
                ratios.push(t / r);
            }
            summary("empty", n, ratios, "");
        }
    }

    if wants("outside") {
        terroir::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global()
            .expect("terroir global pool");
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global()
            .expect("rayon global pool");
        for n in [1_000usize, 1_000_000] {
            let reps = 2_000;
            let mut ratios = Vec::new();
            for round in 0..args.rounds {
                let [t, r] = rotated(
                    round,
                    [
                        &mut || {
                            per_run(reps, || {
                                use terroir::prelude::*;
                                (0..n).into_par_iter().for_each(|_| ());
                            })
                        },
                        &mut || {
                            per_run(reps, || {
                                use rayon::prelude::*;
                                (0..n).into_par_iter().for_each(|_| ());
                            })
                        },
                    ],
                );
                println!("loops bench=outside n={n} round={round} terroir_us={t:.3} rayon_us={r:.3} ratio={:.3}", t / r);
                ratios.push(t / r);
            }
            summary("outside", n, ratios, "");
        }
    }

    let n = 16 << 20;
    if wants("mapsum") {
        let v: Vec<f64> = (0..n).map(|i| (i % 1000) as f64).collect();
        let want: f64 = v.iter().map(|x| x * 1.5).sum();
        let mut ratios = Vec::new();
        for round in 0..args.rounds {
            let reps = 5;
            let [t, r] = rotated(
                round,
                [
                    &mut || {
                        pool.install(|| {
                            per_run(reps, || {
                                use terroir::prelude::*;
                                let s: f64 = v.par_iter().map(|x| x * 1.5).sum();
                                assert!(
                                    (s - want).abs() <= want * 1e-9,
                                    "terroir map-sum: {s} vs {want}"
                                );
                                black_box(s);
                            })
                        })
                    },
                    &mut || {
                        rpool.install(|| {
                            per_run(reps, || {
                                use rayon::prelude::*;
                                let s: f64 = v.par_iter().map(|x| x * 1.5).sum();
                                assert!(
                                    (s - want).abs() <= want * 1e-9,
                                    "rayon map-sum: {s} vs {want}"
                                );
                                black_box(s);
                            })
                        })
                    },
                ],
            );
            println!("loops bench=mapsum n={n} round={round} terroir_us={t:.1} rayon_us={r:.1} ratio={:.3}", t / r);
            ratios.push(t / r);
        }
        summary("mapsum", n, ratios, "");
    }

    if wants("triad") {
        let topo = pool.topology().clone();
        let w = workloads::stream::new(Size::Param(n), &topo).expect("stream-triad");
        w.setup();
        let want = w.sequential();
        let time = |f: &dyn Fn() -> Option<u64>| -> f64 {
            w.setup();
            let t = Instant::now();
            let got = f().expect("a version");
            let us = t.elapsed().as_secs_f64() * 1e6;
            assert_eq!(got, want, "triad: result differs from the sequential one");
            us
        };
        // Warm up every version once (first touch of the flat arrays).
        time(&|| Some(w.terroir(&pool)));
        time(&|| w.terroir_iter(&pool));
        time(&|| w.rayon_iter(&rpool));
        let (mut ratios, mut vs_spawn) = (Vec::new(), Vec::new());
        for round in 0..args.rounds {
            let [s, t, r] = rotated(
                round,
                [
                    &mut || time(&|| Some(w.terroir(&pool))),
                    &mut || time(&|| w.terroir_iter(&pool)),
                    &mut || time(&|| w.rayon_iter(&rpool)),
                ],
            );
            println!(
                "loops bench=triad n={n} round={round} spawn_us={s:.0} terroir_us={t:.0} rayon_us={r:.0} ratio={:.3} vs_spawn={:.3}",
                t / r,
                t / s
            );
            ratios.push(t / r);
            vs_spawn.push(t / s);
        }
        let (med, lo, hi) = spread(vs_spawn);
        summary(
            "triad",
            n,
            ratios,
            &format!(" vs_spawn_median={med:.3} vs_spawn_min={lo:.3} vs_spawn_max={hi:.3}"),
        );
    }
    if wants("tree") {
        // rayon-demo's tree benchmarks: a 100 000-node tree of ranges,
        // summed in prefix and in postfix order.
        const SIZE: u64 = 100_000;
        let children = |r: &std::ops::Range<u64>| {
            let mid = (r.start + 1 + r.end) / 2;
            std::iter::once((r.start + 1)..mid)
                .chain(std::iter::once(mid..r.end))
                .filter(|r| !r.is_empty())
        };
        let want = SIZE * (SIZE - 1) / 2;
        for order in ["postfix", "prefix"] {
            let post = order == "postfix";
            let mut ratios = Vec::new();
            for round in 0..args.rounds {
                let [t, r] = rotated(
                    round,
                    [
                        &mut || {
                            pool.install(|| {
                                per_run(50, || {
                                    use terroir::iter::{walk_tree_postfix, walk_tree_prefix};
                                    use terroir::prelude::*;
                                    let s: u64 = if post {
                                        walk_tree_postfix(0..SIZE, children).map(|r| r.start).sum()
                                    } else {
                                        walk_tree_prefix(0..SIZE, children).map(|r| r.start).sum()
                                    };
                                    assert_eq!(s, want);
                                })
                            })
                        },
                        &mut || {
                            rpool.install(|| {
                                per_run(50, || {
                                    use rayon::iter::{walk_tree_postfix, walk_tree_prefix};
                                    use rayon::prelude::*;
                                    let s: u64 = if post {
                                        walk_tree_postfix(0..SIZE, children).map(|r| r.start).sum()
                                    } else {
                                        walk_tree_prefix(0..SIZE, children).map(|r| r.start).sum()
                                    };
                                    assert_eq!(s, want);
                                })
                            })
                        },
                    ],
                );
                println!("loops bench=tree_{order} n={SIZE} round={round} terroir_us={t:.1} rayon_us={r:.1} ratio={:.3}", t / r);
                ratios.push(t / r);
            }
            summary(&format!("tree_{order}"), SIZE as usize, ratios, "");
        }
    }

    if wants("split") {
        // rayon-demo's str_split: a million bytes of "abcdefg " shuffled,
        // split at a char, at any of four chars, by a closure.
        let mut bytes: Vec<u8> = b"abcdefg "
            .iter()
            .copied()
            .cycle()
            .take(1_000_000)
            .collect();
        let mut rnd = xorshift(0x9E37_79B9_7F4A_7C15);
        for i in (1..bytes.len()).rev() {
            bytes.swap(i, (rnd() % (i as u64 + 1)) as usize);
        }
        let text = String::from_utf8(bytes).expect("ASCII");
        let want = text.split(' ').count();
        const WS: &[char] = &['\r', '\n', ' ', '\t'];
        for (name, kind) in [("split_char", 0), ("split_chars", 1), ("split_fn", 2)] {
            let mut ratios = Vec::new();
            for round in 0..args.rounds {
                let [t, r] = rotated(
                    round,
                    [
                        &mut || {
                            pool.install(|| {
                                per_run(20, || {
                                    use terroir::prelude::*;
                                    let n = match kind {
                                        0 => text.par_split(' ').count(),
                                        1 => text.par_split(WS).count(),
                                        _ => text.par_split(|c| c == ' ').count(),
                                    };
                                    assert_eq!(n, want);
                                })
                            })
                        },
                        &mut || {
                            rpool.install(|| {
                                per_run(20, || {
                                    use rayon::prelude::*;
                                    let n = match kind {
                                        0 => text.par_split(' ').count(),
                                        1 => text.par_split(WS).count(),
                                        _ => text.par_split(|c| c == ' ').count(),
                                    };
                                    assert_eq!(n, want);
                                })
                            })
                        },
                    ],
                );
                println!("loops bench={name} n={} round={round} terroir_us={t:.0} rayon_us={r:.0} ratio={:.3}", text.len(), t / r);
                ratios.push(t / r);
            }
            summary(name, text.len(), ratios, "");
        }
    }

    if wants("sort") {
        // par_sort_unstable of a million random u64s, of a million u64s
        // of 16 keys, and of 50 000 ascending u64s with 223 random swaps
        // (rayon-demo's "mostly ascending").
        let mut rnd = xorshift(0x2545_F491_4F6C_DD1D);
        let random: Vec<u64> = (0..1_000_000).map(|_| rnd()).collect();
        let few: Vec<u64> = random.iter().map(|k| k % 16).collect();
        let mut mostly: Vec<u64> = (0..50_000).collect();
        for _ in 0..223 {
            let (x, y) = ((rnd() % 50_000) as usize, (rnd() % 50_000) as usize);
            mostly.swap(x, y);
        }
        for (name, data) in [
            ("sort_random", &random),
            ("sort_few_keys", &few),
            ("sort_mostly_ascending", &mostly),
        ] {
            let reps = if data.len() > 100_000 { 5 } else { 100 };
            // Only the sort is timed (each run sorts a fresh copy).
            let timed = |sort: &dyn Fn(&mut Vec<u64>)| {
                let mut total = 0.0;
                for _ in 0..reps {
                    let mut w = data.clone();
                    let t = Instant::now();
                    sort(&mut w);
                    total += t.elapsed().as_secs_f64();
                    assert!(w.windows(2).all(|p| p[0] <= p[1]));
                }
                total * 1e6 / reps as f64
            };
            let mut ratios = Vec::new();
            for round in 0..args.rounds {
                let [t, r] = rotated(
                    round,
                    [
                        &mut || {
                            timed(&|w| {
                                use terroir::prelude::*;
                                pool.install(|| w.par_sort_unstable());
                            })
                        },
                        &mut || {
                            timed(&|w| {
                                use rayon::prelude::*;
                                rpool.install(|| w.par_sort_unstable());
                            })
                        },
                    ],
                );
                println!("loops bench={name} n={} round={round} terroir_us={t:.0} rayon_us={r:.0} ratio={:.3}", data.len(), t / r);
                ratios.push(t / r);
            }
            summary(name, data.len(), ratios, "");
        }
    }

    println!("{}", pool.stats());
}

/// A xorshift generator (deterministic data, no dependency).
fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}
