//! Millions of tasks: joins, scoped spawns and `'static` spawns, on every
//! policy and on an oversubscribed described topology, with exact counts.
//!
//! Debug builds run 2^22 joins and about 2^21 scoped spawns per configuration
//! (33.5 M joins and 8.4 M spawns in all, over eight configurations); release builds
//! (`cargo test --release --test stress`) run 2^24 joins. One more test runs
//! 12.2 M scoped spawns in nested scopes in a single run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use terroir::numa::Topology;
use terroir::{Policy, ThreadPoolBuilder};

const DEPTH: u32 = if cfg!(debug_assertions) { 22 } else { 24 };

/// Counts the leaves of a complete binary join tree of `depth` levels.
fn join_tree(depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let (a, b) = terroir::join(|| join_tree(depth - 1), || join_tree(depth - 1));
    a + b
}

/// Spawns a complete binary tree of scoped tasks; each leaf adds one.
fn spawn_tree<'s>(s: &terroir::Scope<'s>, depth: u32, leaves: &'s AtomicU64) {
    if depth == 0 {
        leaves.fetch_add(1, Ordering::Relaxed);
        return;
    }
    s.spawn(move |s| spawn_tree(s, depth - 1, leaves));
    s.spawn(move |s| spawn_tree(s, depth - 1, leaves));
}

#[test]
fn millions_of_joins_and_scoped_spawns() {
    let described_topology = Topology::builder()
        .nodes(2)
        .l3_per_node(2)
        .pus_per_l3(2)
        .build()
        .unwrap();
    for &policy in Policy::ALL {
        for described in [false, true] {
            let mut b = ThreadPoolBuilder::new().policy(policy);
            b = if described {
                b.topology(described_topology.clone()).pin(false)
            } else {
                b.num_threads(2)
            };
            let pool = b.build().unwrap();
            let label = format!("{} described={described}", policy.name());
            assert_eq!(pool.install(|| join_tree(DEPTH)), 1 << DEPTH, "{label}");
            let leaves = AtomicU64::new(0);
            pool.scope(|s| spawn_tree(s, DEPTH - 2, &leaves));
            assert_eq!(leaves.load(Ordering::Relaxed), 1 << (DEPTH - 2), "{label}");
        }
    }
}

/// Opens a scope that spawns `FAN` tasks, each of which opens a nested
/// scope of its own, `depth` levels down; counts the spawned tasks.
fn nested_scopes(depth: u32, spawned: &AtomicU64) {
    const FAN: u32 = 5;
    if depth == 0 {
        return;
    }
    terroir::scope(|s| {
        for _ in 0..FAN {
            s.spawn(move |_| {
                spawned.fetch_add(1, Ordering::Relaxed);
                nested_scopes(depth - 1, spawned);
            });
        }
    });
}

/// One run of more than ten million tasks in 2.4 million nested scopes
/// (5 + 5^2 + … + 5^10 = 12,207,030 spawns), counted exactly.
#[test]
fn ten_million_tasks_in_nested_scopes() {
    const DEPTH: u32 = 10;
    let want: u64 = (1..=DEPTH).map(|d| 5u64.pow(d)).sum();
    assert!(want > 10_000_000);
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let spawned = AtomicU64::new(0);
    pool.install(|| nested_scopes(DEPTH, &spawned));
    assert_eq!(spawned.load(Ordering::Relaxed), want);
}

/// `'static` spawns from outside and from inside the pool, each sending one
/// message: every one arrives exactly once.
#[test]
fn a_million_static_spawns() {
    const N: u64 = 1 << 20;
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let (tx, rx) = mpsc::channel::<u64>();
    let half = N / 2;
    for i in 0..half {
        let tx = tx.clone();
        pool.spawn(move || tx.send(i).unwrap());
    }
    let tx2 = tx.clone();
    pool.spawn(move || {
        for i in half..N {
            let tx = tx2.clone();
            terroir::spawn(move || tx.send(i).unwrap());
        }
    });
    drop(tx);
    let mut seen = vec![false; N as usize];
    for i in rx.iter() {
        assert!(!seen[i as usize], "task {i} ran twice");
        seen[i as usize] = true;
    }
    assert!(seen.iter().all(|&s| s), "some task never ran");
}
