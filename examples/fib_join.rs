//! fib(n) with a `terroir::join` on every call (leaves at `n < 2`): the
//! Rust program that `examples/c/fib.c` is the C twin of, so that the two
//! can be timed side by side (`examples/c/bench.sh`). Checks the result
//! against a sequential fib and prints the best of `runs` timings, in the
//! same one-line format as the C examples:
//!
//! ```text
//! cargo run --release --example fib_join -- [n=28] [runs=3] [shape=closures|c]
//! fib runtime=terroir-rust shape=closures n=28 threads=2 result=317811 expected=317811 seq_s=.. best_s=.. check=ok
//! ```
//!
//! `shape=closures` (the default) is idiomatic Rust: the join's closures
//! are inlined and their results come back in registers. `shape=c` is the
//! program as `fib.c` writes it: each branch calls its task through a
//! function pointer with its argument and result in memory. Timed against
//! `fib.c`, it leaves the FFI as the only difference.
//!
//! Threads: `TERROIR_NUM_THREADS`, else one per CPU (the default pool).

use std::hint::black_box;
use std::process::exit;
use std::time::Instant;

fn fib(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = terroir::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// A task's argument and result, in memory, as `examples/c/fib.c` has them.
struct FibArg {
    n: u32,
    result: u64,
}

/// fib.c's shape in Rust: each join branch calls the task through a
/// function pointer the compiler cannot see through (C's `terroir_task_fn`)
/// with its argument in memory, instead of a closure that the compiler
/// inlines and whose result comes back in a register.
fn fib_c_shape(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let task: fn(&mut FibArg) = black_box(fib_task);
    let mut a = FibArg {
        n: n - 1,
        result: 0,
    };
    let mut b = FibArg {
        n: n - 2,
        result: 0,
    };
    terroir::join(|| task(&mut a), || task(&mut b));
    a.result + b.result
}

fn fib_task(arg: &mut FibArg) {
    arg.result = fib_c_shape(arg.n);
}

fn fib_seq(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    fib_seq(n - 1) + fib_seq(n - 2)
}

fn arg(i: usize, default: u64) -> u64 {
    match std::env::args().nth(i) {
        None => default,
        Some(s) => match s.parse::<u64>() {
            Ok(v) if v > 0 => v,
            _ => {
                eprintln!("fib_join: argument {i} must be a positive integer, not {s:?}");
                exit(2);
            }
        },
    }
}

fn main() {
    let n = u32::try_from(arg(1, 28)).unwrap_or(u32::MAX).min(90);
    let runs = arg(2, 3);
    let (shape, fib): (&str, fn(u32) -> u64) = match std::env::args().nth(3).as_deref() {
        None | Some("closures") => ("closures", fib),
        Some("c") => ("c", fib_c_shape),
        Some(other) => {
            eprintln!("fib_join: argument 3 must be `closures` or `c`, not {other:?}");
            exit(2);
        }
    };
    let pool = terroir::ThreadPoolBuilder::new()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("fib_join: {e}");
            exit(1);
        });
    let mut seq_best = f64::INFINITY;
    let mut expected = 0;
    for _ in 0..runs {
        let t = Instant::now();
        expected = fib_seq(black_box(n));
        seq_best = seq_best.min(t.elapsed().as_secs_f64());
    }
    let mut best = f64::INFINITY;
    let mut result = 0;
    for _ in 0..runs {
        let t = Instant::now();
        result = pool.install(|| fib(black_box(n)));
        best = best.min(t.elapsed().as_secs_f64());
    }
    let ok = result == expected;
    println!(
        "fib runtime=terroir-rust shape={shape} n={n} threads={} result={result} expected={expected} \
         seq_s={seq_best:.6} best_s={best:.6} check={}",
        pool.current_num_threads(),
        if ok { "ok" } else { "FAILED" }
    );
    if !ok {
        exit(1);
    }
}
