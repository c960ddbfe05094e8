//! What one spawn costs, for instruction counts under callgrind: a
//! one-worker `Locality` pool runs `n` empty tasks of one kind, spawned
//! from inside the pool (a scope) or, for `static`, from outside it.
//! Subtract a `none` run (pool start and stop only) and divide by `n`:
//!
//! ```text
//! cargo build --release --example spawn_cost
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/spawn_cost node 20000
//! ```
//!
//! Kinds: `none`, `spawn` (unplaced scoped spawn), `node`, `data`,
//! `worker`, `after` (scoped `spawn_on` at a node, a `NodeVec`'s data, a
//! worker, a temporal key), `static` (`ThreadPool::spawn_on` at a node
//! from the main thread), `fib` (`fib(n)` with a join per call: divide by
//! the number of joins, `fib(n + 1) - 1`).

use std::process::exit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use terroir::pool::NodeVec;
use terroir::{Place, Policy, ThreadPoolBuilder};

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = terroir::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(kind), Some(Ok(n))) = (args.get(1), args.get(2).map(|n| n.parse::<usize>())) else {
        eprintln!("usage: spawn_cost none|spawn|node|data|worker|after|static|fib N");
        exit(2);
    };
    let pool = ThreadPoolBuilder::new()
        .num_threads(1)
        .policy(Policy::Locality)
        .build()
        .unwrap_or_else(|e| {
            eprintln!("error: {e}");
            exit(1)
        });
    let node = pool.topology().nodes()[0].id();
    let data = NodeVec::from_elem_on(0u8, 1 << 16, node).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        exit(1)
    });
    let count = AtomicU64::new(0);
    let place = match kind.as_str() {
        "node" => pool.node(0).expect("node 0"),
        "data" => Place::data(&data),
        "worker" => pool.worker(0).expect("worker 0"),
        "after" => Place::after(7u32),
        _ => Place::anywhere(),
    };
    match kind.as_str() {
        "none" => {}
        "fib" => {
            count.fetch_add(pool.install(|| fib(n as u64)), Ordering::Relaxed);
        }
        "spawn" => pool.scope(|s| {
            for _ in 0..n {
                s.spawn(|_| {
                    count.fetch_add(1, Ordering::Relaxed);
                });
            }
        }),
        "static" => {
            let (tx, rx) = mpsc::channel();
            let place = pool.node(0).expect("node 0");
            for _ in 0..n {
                let tx = tx.clone();
                pool.spawn_on(&place, move || tx.send(()).expect("main waits"));
            }
            for _ in 0..n {
                rx.recv().expect("every task sends");
            }
            count.fetch_add(n as u64, Ordering::Relaxed);
        }
        "node" | "data" | "worker" | "after" => pool.scope(|s| {
            for _ in 0..n {
                s.spawn_on(&place, |_| {
                    count.fetch_add(1, Ordering::Relaxed);
                });
            }
        }),
        other => {
            eprintln!("unknown kind {other:?}");
            exit(2);
        }
    }
    println!("spawn_cost kind={kind} n={n} count={}", count.into_inner());
}
