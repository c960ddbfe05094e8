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
