//! How loops are split and placed: an idle worker's request splits a
//! running loop (no split stress here), the static schedule gives each
//! worker the same contiguous share every time, `parallel_for` covers its
//! range once, and on a described 2-node machine a loop over placed data
//! runs each node's share on that node's workers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use terroir::iter::{parallel_for, ForOptions, Schedule};
use terroir::numa::{NodeId, NodeSet, Topology};
use terroir::pool::{NodeVec, Placement};
use terroir::prelude::*;
use terroir::{Access, Place, Policy, ThreadPool, ThreadPoolBuilder};

fn two_nodes(policy: Policy) -> ThreadPool {
    let topo = Topology::builder().nodes(2).pus_per_l3(2).build().unwrap();
    ThreadPoolBuilder::new()
        .topology(topo)
        .num_threads(4)
        .pin(false)
        .policy(policy)
        .build()
        .unwrap()
}

#[test]
fn an_idle_worker_gets_half_of_a_running_loop() {
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let who = Mutex::new(BTreeSet::new());
    pool.install(|| {
        (0..64).into_par_iter().with_max_len(1).for_each(|_| {
            who.lock()
                .unwrap()
                .insert(terroir::current_thread_index().unwrap());
            std::thread::sleep(Duration::from_millis(2));
        })
    });
    assert_eq!(who.into_inner().unwrap().len(), 2, "both workers ran items");
}

#[test]
fn a_loop_on_a_busy_pool_publishes_at_most_one_half() {
    // Nobody is idle (the other worker blocks in a task that never asks):
    // a long loop publishes half of what is left once, and publishes
    // again only after that half was taken, which nobody does here. So it
    // runs as at most two runs (one without it being long).
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = Mutex::new(rx);
    pool.scope(|s| {
        s.spawn(|_| {
            let _ = rx.lock().unwrap().recv_timeout(Duration::from_secs(30));
        });
        // Give the blocker time to start on the other worker; a request it
        // made on its way (requests are hints and may be stale) is served
        // by a first loop.
        std::thread::sleep(Duration::from_millis(50));
        (0..1000).into_par_iter().for_each(|_| ());
        let runs = (0..2_000_000u64)
            .into_par_iter()
            .map(|x| x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7)
            .fold(|| 0u64, u64::wrapping_add)
            .count();
        tx.send(()).unwrap();
        assert!(
            runs <= 2,
            "{runs} runs: halves published with nobody taking them"
        );
    });
}

#[test]
fn the_static_schedule_gives_each_worker_the_same_contiguous_share() {
    for pool in [
        ThreadPoolBuilder::new()
            .num_threads(3)
            .pin(false)
            .build()
            .unwrap(),
        two_nodes(Policy::Locality),
    ] {
        let run = || {
            let owner: Vec<usize> = pool.install(|| {
                (0..10_007usize)
                    .into_par_iter()
                    .schedule(Schedule::Static)
                    .map(|_| terroir::current_thread_index().unwrap())
                    .collect()
            });
            owner
        };
        let first = run();
        for _ in 0..5 {
            assert_eq!(run(), first, "the same worker for every index, every time");
        }
        // Contiguous shares, one per worker, ordered by node then index.
        let mut shares: Vec<usize> = first.clone();
        shares.dedup();
        assert_eq!(shares.len(), pool.current_num_threads());
        let nodes: Vec<usize> = shares
            .iter()
            .map(|&w| pool.worker_node_index(w).unwrap())
            .collect();
        assert!(nodes.windows(2).all(|w| w[0] <= w[1]), "{nodes:?}");
        let mut sizes = BTreeMap::new();
        for w in &first {
            *sizes.entry(w).or_insert(0usize) += 1;
        }
        let (lo, hi) = (sizes.values().min().unwrap(), sizes.values().max().unwrap());
        assert!(hi - lo <= 1, "near-equal shares: {sizes:?}");
        // with_min_len asks for fewer, longer shares.
        let owners: BTreeSet<usize> = pool.install(|| {
            (0..100usize)
                .into_par_iter()
                .with_min_len(60)
                .schedule(Schedule::Static)
                .map(|_| terroir::current_thread_index().unwrap())
                .collect()
        });
        assert_eq!(owners.len(), 1);
    }
}

#[test]
fn parallel_for_covers_its_range_once() {
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    terroir::iter::set_split_stress(false);
    for schedule in [Schedule::Adaptive, Schedule::Static] {
        for (range, grain) in [
            (0..0, 1),
            (5..6, 0),
            (10..100_010, 64),
            (usize::MAX - 100..usize::MAX, 7),
        ] {
            let hits = Mutex::new(Vec::new());
            let opts = ForOptions::new().grain(grain).schedule(schedule);
            pool.install(|| parallel_for(range.clone(), &opts, |r| hits.lock().unwrap().push(r)));
            let mut hits = hits.into_inner().unwrap();
            hits.sort_by_key(|r| r.start);
            let mut at = range.start;
            for r in &hits {
                assert_eq!(r.start, at, "{schedule:?} {range:?}: contiguous");
                assert!(r.end > r.start);
                at = r.end;
            }
            assert_eq!(at, range.end, "{schedule:?} {range:?}: complete");
        }
    }
}

/// Which node index each index of `0..n` ran on, under `opts`.
fn nodes_of(pool: &ThreadPool, n: usize, opts: &ForOptions) -> Vec<usize> {
    let node = (0..n)
        .map(|_| AtomicUsize::new(usize::MAX))
        .collect::<Vec<_>>();
    pool.install(|| {
        parallel_for(0..n, opts, |r| {
            let w = terroir::current_thread_index().unwrap();
            let here = pool.worker_node_index(w).unwrap();
            for i in r {
                node[i].store(here, Ordering::Relaxed);
            }
        })
    });
    node.into_iter().map(AtomicUsize::into_inner).collect()
}

#[test]
fn placed_loops_run_each_node_share_on_its_node() {
    for (policy, strict) in [(Policy::StrictLocality, false), (Policy::Locality, true)] {
        let pool = two_nodes(policy);
        let n0 = pool.topology().nodes()[0].id();
        let n1 = pool.topology().nodes()[1].id();
        // Data blocked over the two nodes: the first half on node 0.
        let place = Place::pushed([
            Access::new(Some(n0), 1 << 20, false),
            Access::new(Some(n1), 1 << 20, false),
        ]);
        let mut opts = ForOptions::new().place(place);
        if strict {
            opts = opts.strict();
        }
        for _ in 0..5 {
            pool.reset_stats();
            let nodes = nodes_of(&pool, 100_000, &opts);
            assert!(
                nodes[..50_000].iter().all(|&n| n == 0),
                "{policy}: first half on node 0"
            );
            assert!(
                nodes[50_000..].iter().all(|&n| n == 1),
                "{policy}: second half on node 1"
            );
            let stats = pool.stats();
            assert_eq!(stats.locality_ratio(), Some(1.0), "{policy}: {stats:?}");
        }
        // All of it on one node.
        let opts = ForOptions::new().place(pool.node(1).unwrap()).strict();
        assert!(
            nodes_of(&pool, 10_000, &opts).iter().all(|&n| n == 1),
            "{policy}"
        );
    }
}

#[test]
fn placed_static_shares_go_to_their_nodes_workers() {
    let pool = two_nodes(Policy::Hierarchical);
    let n0 = pool.topology().nodes()[0].id();
    let n1 = pool.topology().nodes()[1].id();
    let place = Place::pushed([
        Access::new(Some(n0), 4096, false),
        Access::new(Some(n1), 4096, false),
    ]);
    let opts = ForOptions::new().place(place).schedule(Schedule::Static);
    let nodes = nodes_of(&pool, 1000, &opts);
    assert!(nodes[..500].iter().all(|&n| n == 0));
    assert!(nodes[500..].iter().all(|&n| n == 1));
}

#[test]
fn node_vec_shares_and_data_places() {
    let node = terroir::numa::mems_allowed()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    let set: NodeSet = [node].into_iter().collect();
    let mut v = NodeVec::from_fn_on(100_000, Placement::Blocked(set), |i| i as u64).unwrap();
    let shares = v.node_shares();
    assert_eq!(shares.len(), 1);
    assert_eq!(shares[0].0, NodeId::new(node));
    assert_eq!(Place::data(&v).node(), Some(NodeId::new(node)));
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .policy(Policy::Locality)
        .build()
        .unwrap();
    pool.install(|| {
        v.par_iter_mut().for_each(|x| *x += 1);
        assert_eq!(v.par_iter().sum::<u64>(), (1..=100_000u64).sum::<u64>());
        let w = NodeVec::from_elem_on(2u64, 100_000, NodeId::new(node)).unwrap();
        let dot: u64 = v.par_iter().zip(&w).map(|(a, b)| a * b).sum();
        assert_eq!(dot, 2 * (1..=100_000u64).sum::<u64>());
        assert_eq!(v.par_chunks(1000).count(), 100);
    });
    let empty = NodeVec::<u64>::from_fn_on(0, NodeId::new(node), |_| 0).unwrap();
    assert!(empty.node_shares().is_empty());
    let il = NodeVec::from_elem_on(0u8, 10, Placement::Interleave([node].into_iter().collect()))
        .unwrap();
    assert_eq!(
        il.node_shares().len(),
        1,
        "interleaved over one node: that node"
    );
}

/// Workers of a pool blocked outside it (each in a task placed strictly
/// on it) until [`release`](Blocked::release), or for at most 30 s.
struct Blocked {
    release: Vec<std::sync::mpsc::Sender<()>>,
    gave_up: std::sync::Arc<AtomicUsize>,
}

impl Blocked {
    /// Blocks `workers` of `pool`; returns once each is blocked.
    fn new(pool: &ThreadPool, workers: &[usize]) -> Blocked {
        use std::sync::{mpsc, Arc};
        let gave_up = Arc::new(AtomicUsize::new(0));
        let mut release = Vec::new();
        for &w in workers {
            let (done_tx, done_rx) = mpsc::channel::<()>();
            let (started_tx, started_rx) = mpsc::channel::<()>();
            let g = Arc::clone(&gave_up);
            pool.spawn_on(&pool.worker(w).unwrap().strict(), move || {
                started_tx.send(()).unwrap();
                // Released by `release`, or by the deadline.
                if done_rx.recv_timeout(Duration::from_secs(30)).is_err() {
                    g.fetch_add(1, Ordering::SeqCst);
                }
            });
            started_rx.recv().unwrap();
            release.push(done_tx);
        }
        Blocked { release, gave_up }
    }

    /// Releases the workers; whether any of them gave up waiting (the
    /// work in between needed it for 30 s).
    fn release(self) -> bool {
        for tx in self.release {
            let _ = tx.send(());
        }
        self.gave_up.load(Ordering::SeqCst) > 0
    }
}

/// A place declaring 1 MiB on each of two nodes.
fn both_nodes(nodes: &[NodeId]) -> Place {
    Place::pushed([
        Access::new(Some(nodes[0]), 1 << 20, false),
        Access::new(Some(nodes[1]), 1 << 20, false),
    ])
}

/// A placed loop's shares go to their nodes' own queues, and a running
/// share splits pieces off for an idle worker of its node into that
/// node's queue, where every worker of the node looks, whatever the
/// pool's distribution: not to one worker's inbox, where a worker blocked
/// outside the pool would hold them until it returns. Here worker 0
/// (node 0) and worker 3 (node 1) block until the loop is done, so the
/// loop must finish without them (or they give up after 30 s, and the
/// test fails).
#[test]
fn placed_loop_pieces_do_not_wait_for_a_blocked_worker_under_any_distribution() {
    use terroir::Distribution;

    let mut failed = Vec::new();
    for dist in [
        Distribution::SharedQueue,
        Distribution::ShortestQueue,
        Distribution::RoundRobin,
    ] {
        for policy in [Policy::Locality, Policy::StrictLocality] {
            let topo = Topology::builder().nodes(2).pus_per_l3(3).build().unwrap();
            let pool = ThreadPoolBuilder::new()
                .topology(topo)
                .num_threads(6)
                .pin(false)
                .policy(policy)
                .distribution(dist)
                .build()
                .unwrap();
            assert_eq!(pool.worker_node_index(0), Some(0));
            assert_eq!(pool.worker_node_index(3), Some(1));
            let nodes: Vec<NodeId> = pool.topology().nodes().iter().map(|n| n.id()).collect();
            let blocked = Blocked::new(&pool, &[0, 3]);
            let opts = ForOptions::new().place(both_nodes(&nodes));
            pool.install(|| {
                parallel_for(0..400, &opts, |r| {
                    for _ in r {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                })
            });
            if blocked.release() {
                failed.push(format!("{dist:?}/{policy:?}"));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "the loop waited for a blocked worker (30 s) under {failed:?}"
    );
}

/// `.strict()` changes nothing under the policies that ignore places: a
/// loop over data on two nodes runs on whichever workers are free, here
/// node 0's while both of node 1's block until the loop is done (or give
/// up after 30 s, and the test fails).
#[test]
fn strict_loops_under_flat_and_hierarchical_do_not_wait_for_their_nodes() {
    let mut failed = Vec::new();
    for policy in [Policy::Flat, Policy::Hierarchical] {
        let pool = two_nodes(policy);
        assert_eq!(pool.current_num_threads(), 4);
        let nodes: Vec<NodeId> = pool.topology().nodes().iter().map(|n| n.id()).collect();
        let node1: Vec<usize> = (0..4)
            .filter(|&w| pool.worker_node_index(w) == Some(1))
            .collect();
        let blocked = Blocked::new(&pool, &node1);
        let opts = ForOptions::new().place(both_nodes(&nodes)).strict();
        let ran = AtomicUsize::new(0);
        pool.install(|| {
            parallel_for(0..400, &opts, |r| {
                for _ in r {
                    ran.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_micros(100));
                }
            })
        });
        let waited = blocked.release();
        assert_eq!(ran.into_inner(), 400);
        if waited {
            failed.push(format!("{policy:?}"));
        }
    }
    assert!(
        failed.is_empty(),
        "a strict loop waited for node 1's blocked workers (30 s) under {failed:?}"
    );
}

/// From outside every pool, a loop that can never split runs on the
/// calling thread (as rayon's does: no round trip through the pool); one
/// that can split, or has `with_max_len` leaves or a static schedule, runs
/// on the pool.
#[test]
fn a_loop_that_cannot_split_runs_on_the_calling_thread() {
    use terroir::current_thread_index as index;
    assert_eq!(index(), None, "the test runs outside every pool");
    let v = vec![1u64; 1000];
    let on = |f: &dyn Fn() -> Vec<Option<usize>>| {
        let mut seen = f();
        seen.sort();
        seen.dedup();
        seen
    };
    // Never split: all on this thread.
    let never: [&dyn Fn() -> Vec<Option<usize>>; 4] = [
        &|| {
            v.par_iter()
                .with_min_len(usize::MAX)
                .map(|_| index())
                .collect()
        },
        &|| (0..1).into_par_iter().map(|_| index()).collect(),
        &|| v.par_iter().with_min_len(600).map(|_| index()).collect(),
        &|| Some(5).into_par_iter().map(|_| index()).collect(),
    ];
    for (k, f) in never.iter().enumerate() {
        assert_eq!(on(*f), [None], "loop {k} left the calling thread");
    }
    assert_eq!(
        v.par_iter().with_min_len(usize::MAX).sum::<u64>(),
        1000,
        "the result is the loop's"
    );
    // May split, or splits by design: on the pool.
    let pool: [&dyn Fn() -> Vec<Option<usize>>; 3] = [
        &|| v.par_iter().with_min_len(500).map(|_| index()).collect(),
        &|| {
            (0..1)
                .into_par_iter()
                .with_max_len(1)
                .map(|_| index())
                .collect()
        },
        &|| {
            (0..1)
                .into_par_iter()
                .schedule(Schedule::Static)
                .map(|_| index())
                .collect()
        },
    ];
    for (k, f) in pool.iter().enumerate() {
        assert!(
            on(*f).iter().all(Option::is_some),
            "loop {k} ran off the pool"
        );
    }
    // A panic on the calling thread reaches the caller as from the pool.
    let caught = std::panic::catch_unwind(|| {
        (0..1).into_par_iter().for_each(|_| panic!("inline"));
    });
    assert!(caught.is_err());
}
