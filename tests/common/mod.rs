//! Helpers shared by the integration tests (each test file that needs
//! them declares `mod common;`; not every file uses every helper).
#![allow(dead_code)]

use terroir::numa::{mems_allowed, NodeId, Topology};

/// `fib(n)` with a `terroir::join` on every call with `n >= 2`.
pub fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = terroir::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// The lowest node this process may allocate on.
pub fn first_node() -> NodeId {
    NodeId::new(
        mems_allowed()
            .expect("cannot read the allowed memory nodes")
            .iter()
            .next()
            .expect("this process may allocate on no node"),
    )
}

/// A topology's distance matrix, by node index.
pub fn distances(t: &Topology) -> Vec<Vec<u32>> {
    let n = t.nodes().len();
    (0..n)
        .map(|i| (0..n).map(|j| t.distance_by_index(i, j)).collect())
        .collect()
}

/// Spins (yielding) until `flag` is set; panics after a minute, so that a
/// protocol bug fails the test instead of hanging it.
pub fn spin_until(flag: &std::sync::atomic::AtomicBool) {
    let start = std::time::Instant::now();
    while !flag.load(std::sync::atomic::Ordering::Acquire) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "waited a minute for a flag"
        );
        std::thread::yield_now();
    }
}

/// Joins until `flag` is set: each join polls for steal requests, so an
/// idle worker can take the caller's pending continuation.
pub fn join_until(flag: &std::sync::atomic::AtomicBool) {
    let start = std::time::Instant::now();
    while !flag.load(std::sync::atomic::Ordering::Acquire) {
        assert!(start.elapsed() < std::time::Duration::from_secs(60));
        terroir::join(|| (), || ());
    }
}
