//! Places on described multi-node topologies: strict tasks never leave
//! their node, hints run on their node while it has free workers and are
//! taken by other nodes only while it is busy, temporal places return to the
//! same worker, work-pushing picks the node the cost formula says, and no
//! mix of places deadlocks under any policy or distribution.
//!
//! The topologies are described (`Topology::builder`), so the workers are
//! unpinned threads sharing this machine's CPUs: enough for the scheduling
//! logic, which only looks at the node each worker was given. Real nodes
//! are tested in the QEMU guest (`tests/numa_guest.rs`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use terroir::numa::{NodeId, Topology};
use terroir::{
    Access, Distribution, Place, PlaceError, Policy, Scope, ThreadPool, ThreadPoolBuilder,
};

const DISTRIBUTIONS: [Distribution; 3] = [
    Distribution::SharedQueue,
    Distribution::RoundRobin,
    Distribution::ShortestQueue,
];

/// `nodes` nodes of `pus` PUs each (one L3 per node); with 4 nodes, pairs
/// (0,1) and (2,3) are at distance 16 and the pairs 32 apart.
fn described(nodes: usize, pus: usize) -> Topology {
    let mut b = Topology::builder()
        .nodes(nodes)
        .l3_per_node(1)
        .pus_per_l3(pus);
    if nodes == 4 {
        let d = |a: usize, b: usize| match (a, b) {
            _ if a == b => 10,
            _ if a / 2 == b / 2 => 16,
            _ => 32,
        };
        b = b.distances((0..16).map(|i| d(i / 4, i % 4)).collect());
    }
    b.build().expect("described topology")
}

fn pool(topo: Topology, policy: Policy, distribution: Distribution) -> ThreadPool {
    ThreadPoolBuilder::new()
        .topology(topo)
        .pin(false)
        .policy(policy)
        .distribution(distribution)
        .build()
        .unwrap_or_else(|e| panic!("pool ({policy}, {distribution:?}): {e}"))
}

/// Runs `f`, aborting the whole test process if it takes longer than
/// `secs`: a hung pool cannot be unwound, and a hang must fail loudly.
fn within<R: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(r)) => r,
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => {
            eprintln!("{what}: did not finish within {secs} s (deadlock?); aborting");
            std::process::abort();
        }
    }
}

/// The node index of the worker running the caller.
fn my_node(pool: &ThreadPool) -> usize {
    let w = pool
        .current_thread_index()
        .expect("a task runs on a worker of its pool");
    pool.worker_node_index(w).expect("a worker has a node")
}

/// A small deterministic generator (tests must replay).
fn lcg(state: &mut u64) -> usize {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    (*state >> 33) as usize
}

/// Spawns `count` node-placed tasks (strict through the place or the
/// policy), each spawning one more to another node, from inside the pool;
/// returns (tasks run, tasks that ran off their node).
fn strict_run(pool: &Arc<ThreadPool>, strict_place: bool, count: usize) -> (usize, usize) {
    let nodes = pool.topology().nodes().len();
    let ran = AtomicUsize::new(0);
    let off = AtomicUsize::new(0);
    let place = |k: usize| {
        let p = pool.node(k).expect("node index in range");
        if strict_place {
            p.strict()
        } else {
            p
        }
    };
    pool.scope(|s| {
        let mut seed = 7u64;
        for _ in 0..count {
            let (k, k2) = (lcg(&mut seed) % nodes, lcg(&mut seed) % nodes);
            let (ran, off, pool) = (&ran, &off, &**pool);
            let inner = place(k2);
            s.spawn_on(&place(k), move |s| {
                ran.fetch_add(1, Ordering::Relaxed);
                if my_node(pool) != k {
                    off.fetch_add(1, Ordering::Relaxed);
                }
                // Some work, and a join, so that thieves come looking.
                let (a, b) =
                    terroir::join(|| (0..200u64).sum::<u64>(), || (0..300u64).sum::<u64>());
                assert_eq!(a + b, 19_900 + 44_850);
                s.spawn_on(&inner, move |_| {
                    ran.fetch_add(1, Ordering::Relaxed);
                    if my_node(pool) != k2 {
                        off.fetch_add(1, Ordering::Relaxed);
                    }
                });
            });
        }
    });
    (ran.into_inner(), off.into_inner())
}

#[test]
fn strict_tasks_never_run_off_their_node() {
    for distribution in DISTRIBUTIONS {
        // A strict place is strict under every policy.
        for (policy, strict_place) in [
            (Policy::StrictLocality, false),
            (Policy::StrictLocality, true),
            (Policy::Locality, true),
            (Policy::Hierarchical, true),
            (Policy::Flat, true),
        ] {
            let pool = Arc::new(pool(described(4, 2), policy, distribution));
            let what =
                format!("strict run ({policy}, {distribution:?}, strict place {strict_place})");
            let p = Arc::clone(&pool);
            let (ran, off) = within(60, &what, move || strict_run(&p, strict_place, 1000));
            assert_eq!(ran, 2000, "{what}: every task runs once");
            assert_eq!(
                off, 0,
                "{what}: {off} of {ran} strict tasks ran off their node"
            );
        }
    }
}

#[test]
fn strict_worker_places_run_on_that_worker() {
    for &policy in Policy::ALL {
        let pool = pool(described(2, 2), policy, Distribution::SharedQueue);
        let n = pool.current_num_threads();
        let wrong = Mutex::new(Vec::new());
        pool.scope(|s| {
            for i in 0..400 {
                let w = i % n;
                let wrong = &wrong;
                s.spawn_on(&pool.worker(w).unwrap().strict(), move |_| {
                    let got = terroir::current_thread_index();
                    if got != Some(w) {
                        wrong.lock().unwrap().push((w, got));
                    }
                });
            }
        });
        let wrong = wrong.into_inner().unwrap();
        assert!(
            wrong.is_empty(),
            "{policy}: (asked, ran on) for misplaced tasks: {wrong:?}"
        );
    }
}

/// Node index of each worker, for `'static` tasks that cannot borrow the
/// pool.
fn node_table(pool: &ThreadPool) -> Arc<Vec<usize>> {
    Arc::new(
        (0..pool.current_num_threads())
            .map(|w| pool.worker_node_index(w).unwrap())
            .collect(),
    )
}

fn node_from(table: &[usize]) -> usize {
    table[terroir::current_thread_index().expect("a task runs on a worker")]
}

#[test]
fn hints_run_on_their_node_while_it_has_free_workers() {
    // One task at a time from outside the pool: the target node's workers
    // are idle when each hint arrives, so no other node may take it.
    for distribution in DISTRIBUTIONS {
        let pool = pool(described(4, 2), Policy::Locality, distribution);
        let table = node_table(&pool);
        let (tx, rx) = mpsc::channel();
        let tasks = 200;
        let mut on_node = 0;
        for i in 0..tasks {
            let k = i % 4;
            let (tx, table) = (tx.clone(), Arc::clone(&table));
            pool.spawn_on(&pool.node(k).unwrap(), move || {
                tx.send(node_from(&table)).unwrap()
            });
            let ran = rx
                .recv_timeout(Duration::from_secs(30))
                .expect("the hint ran within 30 s");
            if ran != k {
                eprintln!("{distribution:?}: task {i} for node {k} ran on node {ran}");
            }
            on_node += usize::from(ran == k);
        }
        // Not all: the workers are unpinned threads, 8 on this machine's
        // CPUs, and one preempted in the tail of its previous task (after
        // sending its answer) still counts as busy; if its node has no
        // other free worker, another node may rightly take the hint. A
        // scheduler that ignored hints would place about 1/4 here.
        assert!(
            on_node * 100 >= tasks * 95,
            "{distribution:?}: only {on_node} of {tasks} hints ran on their (idle) node"
        );
    }
}

/// Node 1's only worker is held by a task; returns the pool, the release
/// flag and a receiver that says when the holder started.
fn hold_node_1(policy: Policy) -> (Arc<ThreadPool>, Arc<AtomicBool>) {
    let pool = Arc::new(pool(described(2, 1), policy, Distribution::SharedQueue));
    let release = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let r = Arc::clone(&release);
    pool.spawn_on(&pool.node(1).unwrap().strict(), move || {
        tx.send(()).unwrap();
        while !r.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the holder started on node 1");
    (pool, release)
}

#[test]
fn a_hint_for_a_busy_node_is_taken_by_another_node() {
    let (pool, release) = hold_node_1(Policy::Locality);
    let table = node_table(&pool);
    let (tx, rx) = mpsc::channel();
    pool.spawn_on(&pool.node(1).unwrap(), move || {
        tx.send(node_from(&table)).unwrap()
    });
    // Node 1 is busy until released: node 0 must take the hint meanwhile.
    let ran = rx.recv_timeout(Duration::from_secs(30));
    release.store(true, Ordering::Release);
    assert_eq!(
        ran,
        Ok(0),
        "a hint for busy node 1 should run on node 0 while node 1 is busy"
    );
}

#[test]
fn a_strict_task_for_a_busy_node_waits_for_it() {
    let (pool, release) = hold_node_1(Policy::Locality);
    let table = node_table(&pool);
    let (tx, rx) = mpsc::channel();
    pool.spawn_on(&pool.node(1).unwrap().strict(), move || {
        tx.send(node_from(&table)).unwrap()
    });
    // Node 0 is idle, but may not take it.
    let early = rx.recv_timeout(Duration::from_millis(100));
    release.store(true, Ordering::Release);
    assert!(early.is_err(), "a strict task left busy node 1: {early:?}");
    assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(1));
}

/// A node with workers keeps its own tasks even when a described distance
/// matrix rates another node nearer than the node itself: the matrix only
/// says where a node *without* workers sends its tasks.
#[test]
fn a_node_with_workers_keeps_its_tasks_whatever_the_distances() {
    let topo = Topology::builder()
        .nodes(2)
        .pus_per_l3(1)
        .distances(vec![30, 10, 10, 30])
        .build()
        .expect("described topology");
    for policy in [Policy::Locality, Policy::StrictLocality] {
        let pool = pool(topo.clone(), policy, Distribution::SharedQueue);
        let table = node_table(&pool);
        let (tx, rx) = mpsc::channel();
        for i in 0..40 {
            let k = i % 2;
            let (tx, table) = (tx.clone(), Arc::clone(&table));
            pool.spawn_on(&pool.node(k).unwrap().strict(), move || {
                tx.send((k, node_from(&table))).unwrap()
            });
        }
        for _ in 0..40 {
            let (k, ran) = rx
                .recv_timeout(Duration::from_secs(30))
                .expect("the strict task ran within 30 s");
            assert_eq!(
                ran, k,
                "{policy}: a strict task for node {k} ran on node {ran}"
            );
        }
    }
}

/// Two nodes of one worker each, 30 apart (running a task away from its
/// data is taken to cost 3 times its length), with node 1's mean placed
/// task time primed to about `mean` by a strict task that long.
fn primed_pair(mean: Duration, distribution: Distribution) -> Arc<ThreadPool> {
    let topo = Topology::builder()
        .nodes(2)
        .l3_per_node(1)
        .pus_per_l3(1)
        .distances(vec![10, 30, 30, 10])
        .build()
        .expect("described topology");
    let pool = Arc::new(pool(topo, Policy::Locality, distribution));
    let (tx, rx) = mpsc::channel();
    pool.spawn_on(&pool.node(1).unwrap().strict(), move || {
        std::thread::sleep(mean);
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the priming task ran");
    pool
}

/// How node 1's worker is held.
#[derive(Clone, Copy, Debug)]
enum Holder {
    /// By a strict placed task.
    Placed,
    /// By an unplaced job (spawned by a strict task on node 1 while node
    /// 0 is kept busy, so that node 1's worker takes it itself).
    Unplaced,
}

/// Holds node 1's worker until `release` (or for `hold`, if given);
/// returns once the holder runs, with a time taken before the worker took
/// the holding job.
fn hold(
    pool: &Arc<ThreadPool>,
    how: Holder,
    hold: Option<Duration>,
    release: &Arc<AtomicBool>,
) -> Instant {
    let (tx, rx) = mpsc::channel();
    let r = Arc::clone(release);
    let body = move || {
        tx.send(()).unwrap();
        match hold {
            Some(d) => std::thread::sleep(d),
            None => {
                while !r.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    };
    let start = Instant::now();
    match how {
        Holder::Placed => pool.spawn_on(&pool.node(1).unwrap().strict(), body),
        Holder::Unplaced => {
            let started = Arc::new(AtomicBool::new(false));
            let s = Arc::clone(&started);
            pool.spawn_on(&pool.node(0).unwrap().strict(), move || {
                let until = Instant::now() + Duration::from_secs(30);
                while !s.load(Ordering::Acquire) && Instant::now() < until {
                    std::thread::yield_now();
                }
            });
            let p = Arc::clone(pool);
            pool.spawn_on(&pool.node(1).unwrap().strict(), move || {
                p.spawn(move || {
                    started.store(true, Ordering::Release);
                    body()
                })
            });
        }
    }
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the holder started");
    start
}

#[test]
fn a_hint_its_node_is_about_to_reach_stays_home() {
    // Node 1 runs a task of its usual length (50 ms) when a hint for it
    // arrives, and node 0 is idle. Node 1 will have both done in ~100 ms;
    // node 0 would need ~150 ms for the hint away from its data, so it
    // leaves it (it would take it only 150 ms after it first saw the
    // holder). Each round starts after a pause longer than that, so a
    // sighting left from an earlier job must not count for the new one.
    for distribution in DISTRIBUTIONS {
        let pool = primed_pair(Duration::from_millis(50), distribution);
        let table = node_table(&pool);
        let release = Arc::new(AtomicBool::new(false));
        for round in 0..2 {
            std::thread::sleep(Duration::from_millis(200));
            hold(
                &pool,
                Holder::Placed,
                Some(Duration::from_millis(50)),
                &release,
            );
            let (tx, rx) = mpsc::channel();
            let table = Arc::clone(&table);
            pool.spawn_on(&pool.node(1).unwrap(), move || {
                tx.send(node_from(&table)).unwrap()
            });
            let ran = rx.recv_timeout(Duration::from_secs(30));
            assert_eq!(
                ran,
                Ok(1),
                "{distribution:?}, round {round}: the hint left node 1, which was about to take it"
            );
        }
    }
}

#[test]
fn a_hint_behind_an_overrunning_job_is_taken_in_time() {
    // Node 1's tasks take ~10 ms, but the job holding its worker does not
    // end. Node 0 must take the hint, though not before the holder has run
    // 3 mean lengths (the cost of running it on node 0), and without a new
    // push to wake it: it left the hint for later and must look again by
    // itself. Whether the holder is placed or not, and however the node
    // distributes its hints.
    let cases = [
        (Holder::Placed, Distribution::SharedQueue),
        (Holder::Placed, Distribution::RoundRobin),
        (Holder::Placed, Distribution::ShortestQueue),
        (Holder::Unplaced, Distribution::SharedQueue),
    ];
    for (how, distribution) in cases {
        let pool = primed_pair(Duration::from_millis(10), distribution);
        let table = node_table(&pool);
        let release = Arc::new(AtomicBool::new(false));
        let start = hold(&pool, how, None, &release);
        // Node 0 has parked by now.
        std::thread::sleep(Duration::from_millis(20));
        let (tx, rx) = mpsc::channel();
        pool.spawn_on(&pool.node(1).unwrap(), move || {
            tx.send((node_from(&table), Instant::now())).unwrap()
        });
        let ran = rx.recv_timeout(Duration::from_secs(30));
        release.store(true, Ordering::Release);
        let (node, at) =
            ran.unwrap_or_else(|_| panic!("{how:?}, {distribution:?}: the hint waited for node 1"));
        assert_eq!(node, 0, "{how:?}, {distribution:?}");
        // The mean is the priming task's time, at least 10 ms (the other
        // placed tasks here are not timed): the rule allows the steal 3
        // means after a thief first saw the holder, which was after the
        // push, itself 20 ms after `start`.
        let waited = at.duration_since(start);
        assert!(
            waited >= Duration::from_millis(50),
            "{how:?}, {distribution:?}: node 0 took the hint after {waited:?}, \
             before node 1's job had overrun"
        );
    }
}

#[test]
fn a_backlog_for_a_busy_node_is_shared() {
    // Eight 10 ms hints for node 1, pushed while both workers sleep: node
    // 1's one worker would need 80 ms, so node 0 must be woken and take
    // some of them despite the distance, however node 1 spreads its hints.
    for distribution in DISTRIBUTIONS {
        let pool = primed_pair(Duration::from_millis(10), distribution);
        let table = node_table(&pool);
        std::thread::sleep(Duration::from_millis(50));
        let (tx, rx) = mpsc::channel();
        for _ in 0..8 {
            let (tx, table) = (tx.clone(), Arc::clone(&table));
            pool.spawn_on(&pool.node(1).unwrap(), move || {
                std::thread::sleep(Duration::from_millis(10));
                tx.send(node_from(&table)).unwrap()
            });
        }
        let ran: Vec<usize> = (0..8)
            .map(|_| {
                rx.recv_timeout(Duration::from_secs(30))
                    .expect("every hint ran")
            })
            .collect();
        assert!(
            ran.contains(&0),
            "{distribution:?}: node 0 took none of node 1's backlog: {ran:?}"
        );
    }
}

#[test]
fn temporal_places_return_to_the_worker_that_ran_the_key_last() {
    for policy in [Policy::Locality, Policy::StrictLocality] {
        let pool = pool(described(2, 2), policy, Distribution::SharedQueue);
        let runs: Vec<Mutex<Vec<usize>>> = (0..32).map(|_| Mutex::new(Vec::new())).collect();
        // Round 1 places each key anywhere; rounds 2 and 3 must follow it.
        for _round in 0..3 {
            pool.scope(|s| {
                for (key, runs) in runs.iter().enumerate() {
                    s.spawn_on(&Place::after(("block", key)).strict(), move |_| {
                        runs.lock()
                            .unwrap()
                            .push(terroir::current_thread_index().unwrap());
                    });
                }
            });
        }
        for (key, runs) in runs.into_iter().enumerate() {
            let runs = runs.into_inner().unwrap();
            assert_eq!(runs.len(), 3);
            assert!(
                runs.iter().all(|&w| w == runs[0]),
                "{policy}: key {key} ran on workers {runs:?}, not always where it ran first"
            );
        }
    }
}

#[test]
fn work_pushing_picks_the_node_of_least_weighted_distance() {
    // Distances: (0,1) and (2,3) at 16, across at 32.
    let pool = pool(described(4, 1), Policy::Locality, Distribution::SharedQueue);
    let node = |i: u32| Some(NodeId::new(i));
    let cases: Vec<(Vec<Access>, usize, &str)> = vec![
        // 1 MB read on 2 + 300 kB written on 3: node 2 costs
        // 1e6*10 + 6e5*16 = 19.6e6, node 3 1e6*16 + 6e5*10 = 22e6.
        (
            vec![
                Access::new(node(2), 1_000_000, false),
                Access::new(node(3), 300_000, true),
            ],
            2,
            "mostly read on 2",
        ),
        // Writes weigh twice: 1 MB read on 0 vs 600 kB written on 1: node 1
        // (1e6*16 + 1.2e6*10 = 28e6) beats node 0 (1e6*10 + 1.2e6*16 =
        // 29.2e6); unweighted, node 0 would win.
        (
            vec![
                Access::new(node(0), 1_000_000, false),
                Access::new(node(1), 600_000, true),
            ],
            1,
            "writes weigh twice",
        ),
        // A region below the threshold (10 kB) does not count.
        (
            vec![
                Access::new(node(3), 9_000, true),
                Access::new(node(1), 20_000, false),
            ],
            1,
            "small regions ignored",
        ),
    ];
    let pool = &pool;
    for (accesses, want, what) in cases {
        for _ in 0..20 {
            let place = Place::pushed(accesses.clone()).strict();
            let got = pool.install(|| {
                let (tx, rx) = mpsc::channel();
                pool.scope(|s| s.spawn_on(&place, move |_| tx.send(my_node(pool)).unwrap()));
                rx.recv().unwrap()
            });
            assert_eq!(
                got, want,
                "{what}: pushed to node {got}, the formula says {want}"
            );
        }
    }
}

#[test]
fn bad_node_and_worker_indices_are_typed_errors() {
    let pool = pool(described(4, 1), Policy::Locality, Distribution::SharedQueue);
    match pool.node(4) {
        Err(e @ PlaceError::NodeOutOfRange { index: 4, nodes: 4 }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("node index 4") && msg.contains("0..4"),
                "{msg}"
            );
        }
        other => panic!("node(4) on 4 nodes: {other:?}"),
    }
    match pool.worker(9) {
        Err(
            e @ PlaceError::WorkerOutOfRange {
                index: 9,
                workers: 4,
            },
        ) => {
            assert!(e.to_string().contains("worker index 9"), "{e}");
        }
        other => panic!("worker(9) of 4: {other:?}"),
    }
    // Two threads on four nodes: nodes 2 and 3 have no worker.
    let small = ThreadPoolBuilder::new()
        .topology(described(4, 1))
        .num_threads(2)
        .pin(false)
        .policy(Policy::Locality)
        .build()
        .unwrap();
    let empty: Vec<usize> = (0..4).filter(|&k| small.node(k).is_err()).collect();
    assert_eq!(empty.len(), 2, "nodes without a worker: {empty:?}");
    for k in empty {
        match small.node(k) {
            Err(PlaceError::NoWorkerOnNode { node }) => assert_eq!(node, NodeId::new(k as u32)),
            other => panic!("node({k}) without a worker: {other:?}"),
        }
    }
}

/// A place made by another pool: `try_spawn_on` refuses it and spawns
/// nothing; `spawn_on` runs the task unplaced and counts it, under every
/// policy (strict included: it cannot wait for a worker that does not
/// exist).
#[test]
fn places_of_another_pool_are_refused_or_counted() {
    let big = pool(described(4, 2), Policy::Locality, Distribution::SharedQueue);
    let worker_place = big.worker(7).unwrap();
    let node_place = big.node(3).unwrap().strict();
    for &policy in Policy::ALL {
        let small = pool(described(2, 1), policy, Distribution::SharedQueue);
        let ran = AtomicUsize::new(0);
        small.scope(|s| {
            match s.try_spawn_on(&worker_place, |_| {
                ran.fetch_add(1, Ordering::Relaxed);
            }) {
                Err(
                    e @ PlaceError::WorkerOutOfRange {
                        index: 7,
                        workers: 2,
                    },
                ) => assert!(e.to_string().contains("worker index 7"), "{e}"),
                other => panic!("{policy}: worker 7 of a 2-worker pool: {other:?}"),
            }
            match s.try_spawn_on(&node_place, |_| {
                ran.fetch_add(1, Ordering::Relaxed);
            }) {
                Err(e @ PlaceError::NodeNotInPool { nodes: 2, .. }) => {
                    assert!(e.to_string().contains("node3"), "{e}")
                }
                other => panic!("{policy}: node 3 in a 2-node pool: {other:?}"),
            }
        });
        assert_eq!(
            ran.load(Ordering::Relaxed),
            0,
            "{policy}: a refused place ran"
        );
        assert_eq!(small.stats().unroutable, 0, "{policy}");
        let (worker_place, node_place) = (worker_place.clone(), node_place.clone());
        within(30, "unroutable places", move || {
            let ran = AtomicUsize::new(0);
            small.scope(|s| {
                for _ in 0..10 {
                    s.spawn_on(&worker_place, |_| {
                        ran.fetch_add(1, Ordering::Relaxed);
                    });
                    s.spawn_on(&node_place, |_| {
                        ran.fetch_add(1, Ordering::Relaxed);
                    });
                }
            });
            let (tx, rx) = mpsc::channel();
            small.spawn_on(&worker_place, move || tx.send(()).unwrap());
            rx.recv().unwrap();
            assert_eq!(ran.load(Ordering::Relaxed), 20, "{policy}");
            let stats = small.stats();
            assert_eq!(stats.unroutable, 21, "{policy}: {stats}");
            assert!(stats.to_string().contains("21 with a place"), "{stats}");
            small.reset_stats();
            assert_eq!(small.stats().unroutable, 0);
        });
    }
}

#[test]
fn declared_data_gives_the_locality_ratio() {
    let run = |policy| {
        let pool = pool(described(4, 1), policy, Distribution::SharedQueue);
        pool.scope(|s| {
            for i in 0..400u32 {
                let data = [Access::new(Some(NodeId::new(i % 4)), 64 << 10, false)];
                s.spawn_on(&Place::pushed(data), |_| {
                    std::hint::black_box((0..500u64).sum::<u64>());
                });
            }
        });
        let stats = pool.stats();
        assert_eq!(
            stats.nodes.iter().map(|n| n.placed).sum::<u64>(),
            400,
            "{policy}: {stats}"
        );
        assert_eq!(stats.declared_bytes, 400 * (64 << 10), "{policy}: {stats}");
        stats.locality_ratio().expect("data was declared")
    };
    let strict = run(Policy::StrictLocality);
    assert_eq!(strict, 1.0, "strict: every declared byte local");
    let oblivious = run(Policy::Hierarchical);
    assert!(
        oblivious < 0.9,
        "hierarchical ignores places, yet {oblivious} of the bytes were local"
    );
}

/// One step of a random program mixing places, joins and nested scopes.
#[derive(Clone, Debug)]
enum Step {
    Node(usize, bool),
    Worker(usize, bool),
    After(u8, bool),
    Pushed(usize, bool),
    Join,
    Nested(Vec<Step>),
}

fn step() -> impl Strategy<Value = Step> {
    let leaf = prop_oneof![
        (0..4usize, any::<bool>()).prop_map(|(n, s)| Step::Node(n, s)),
        (0..8usize, any::<bool>()).prop_map(|(w, s)| Step::Worker(w, s)),
        (any::<u8>(), any::<bool>()).prop_map(|(k, s)| Step::After(k, s)),
        (0..4usize, any::<bool>()).prop_map(|(n, s)| Step::Pushed(n, s)),
        Just(Step::Join),
    ];
    leaf.prop_recursive(3, 40, 6, |inner| {
        prop::collection::vec(inner, 1..6).prop_map(Step::Nested)
    })
}

fn place_of(pool: &ThreadPool, step: &Step) -> Option<Place> {
    let strict = |p: Place, s: bool| if s { p.strict() } else { p };
    Some(match *step {
        Step::Node(n, s) => strict(pool.node(n % pool.topology().nodes().len()).ok()?, s),
        Step::Worker(w, s) => strict(pool.worker(w % pool.current_num_threads()).ok()?, s),
        Step::After(k, s) => strict(Place::after(k), s),
        Step::Pushed(n, s) => strict(
            Place::pushed([Access::new(Some(NodeId::new(n as u32)), 1 << 20, false)]),
            s,
        ),
        _ => return None,
    })
}

/// Runs `steps` in `s`; returns how many leaves it will count.
fn run_steps<'s>(pool: &'s ThreadPool, s: &Scope<'s>, steps: &'s [Step], count: &'s AtomicUsize) {
    for st in steps {
        match st {
            Step::Join => {
                let (a, b) = terroir::join(
                    || count.fetch_add(1, Ordering::Relaxed),
                    || count.fetch_add(1, Ordering::Relaxed),
                );
                assert_ne!(a, b);
            }
            Step::Nested(inner) => s.spawn(move |_| {
                pool.scope(|s2| run_steps(pool, s2, inner, count));
            }),
            leaf => {
                let place = place_of(pool, leaf).expect("a leaf step has a place");
                s.spawn_on(&place, move |_| {
                    count.fetch_add(1, Ordering::Relaxed);
                });
            }
        }
    }
}

fn expected(steps: &[Step]) -> usize {
    steps
        .iter()
        .map(|s| match s {
            Step::Join => 2,
            Step::Nested(inner) => expected(inner),
            _ => 1,
        })
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any mix of places, strict or not, joins and nested scopes finishes
    /// (under a deadline) and runs every task once, under every policy and
    /// distribution.
    #[test]
    fn random_placed_programs_finish(
        steps in prop::collection::vec(step(), 1..12),
        policy in prop::sample::select(Policy::ALL.to_vec()),
        distribution in prop::sample::select(DISTRIBUTIONS.to_vec()),
    ) {
        let want = expected(&steps);
        let what = format!("{policy}, {distribution:?}, {steps:?}");
        let got = within(60, &what.clone(), move || {
            let pool = pool(described(4, 2), policy, distribution);
            let count = AtomicUsize::new(0);
            pool.scope(|s| run_steps(&pool, s, &steps, &count));
            count.into_inner()
        });
        prop_assert_eq!(got, want, "{}", what);
    }
}
