//! Every workload of `benches/workloads/` under every [`Policy`], at the
//! machine's thread count, with the sequential version as the baseline in
//! the same run, and the queue-discipline dimension of Qawasmeh et al.
//! (`hierarchical-fifo`: oldest job first from a worker's own deque,
//! breadth-first, against the default newest-first, depth-first).
//!
//! ```text
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench policies
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench policies -- heat   # one workload
//! TERROIR_BENCH_SIZE=large cargo bench --bench policies                     # bigger inputs
//! ```
//!
//! Ids: `<workload>/sequential`, `<workload>/<policy>` (LIFO deques, placed
//! tasks through their node's shared queue), `<workload>/hierarchical-fifo`,
//! and `<workload>/locality-round-robin` and
//! `<workload>/locality-shortest-queue` (Klinkenberg's distributions of
//! placed tasks over a node's workers, [`Distribution`]). Every runner's result is checked
//! against the sequential one before it is timed. Each workload's module
//! says what it is and what its sizes mean.

use criterion::{criterion_group, criterion_main, Criterion};
use terroir::{DequeOrder, Distribution, Policy, ThreadPoolBuilder};

#[path = "workloads/mod.rs"]
mod workloads;

#[path = "harness/mod.rs"]
mod harness;

fn policies(c: &mut Criterion) {
    let size = harness::size();
    let topo = harness::topology();
    let shared = Distribution::SharedQueue;
    let mut runners = Vec::new();
    for &policy in Policy::ALL {
        runners.push((policy.name().to_string(), policy, DequeOrder::Lifo, shared));
    }
    runners.push((
        "hierarchical-fifo".to_string(),
        Policy::Hierarchical,
        DequeOrder::Fifo,
        shared,
    ));
    // Klinkenberg's distributions of placed tasks inside a node (the
    // default is the node's shared queue).
    runners.push((
        "locality-round-robin".to_string(),
        Policy::Locality,
        DequeOrder::Lifo,
        Distribution::RoundRobin,
    ));
    runners.push((
        "locality-shortest-queue".to_string(),
        Policy::Locality,
        DequeOrder::Lifo,
        Distribution::ShortestQueue,
    ));
    let pools: Vec<_> = runners
        .iter()
        .map(|(id, policy, order, distribution)| {
            let pool = ThreadPoolBuilder::new()
                .topology(topo.clone())
                .policy(*policy)
                .deque_order(*order)
                .distribution(*distribution)
                .build()
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            (id.as_str(), pool)
        })
        .collect();
    for name in workloads::NAMES {
        let (w, want) = harness::build(name, size, &topo);
        let mut g = harness::group(c, &*w);
        harness::bench(&mut g, &*w, "sequential", want, || w.sequential());
        for (id, pool) in &pools {
            harness::bench(&mut g, &*w, id, want, || w.terroir(pool));
        }
        g.finish();
    }
}

criterion_group!(benches, policies);
criterion_main!(benches);
