//! The rayon-core contract of `join`, `scope`, `in_place_scope`, `spawn` and
//! `ThreadPool`, checked under every policy, on this machine and on
//! described multi-node topologies (unpinned: described CPUs need not exist).

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

mod common;
use common::fib;

use proptest::prelude::*;
use terroir::numa::Topology;
use terroir::{Policy, ThreadPool, ThreadPoolBuildError, ThreadPoolBuilder};

/// A 2-node × 2-L3 × 2-PU described topology (8 PUs).
fn two_nodes() -> Topology {
    Topology::builder()
        .nodes(2)
        .l3_per_node(2)
        .pus_per_l3(2)
        .build()
        .unwrap()
}

/// Pools to run every semantic test on: this machine (2 threads) and an
/// oversubscribed described 2-node machine (8 threads), under each policy.
fn pools() -> Vec<(String, ThreadPool)> {
    let mut out = Vec::new();
    for &policy in Policy::ALL {
        let here = ThreadPoolBuilder::new()
            .num_threads(2)
            .policy(policy)
            .build()
            .unwrap();
        out.push((format!("here/{}", policy.name()), here));
        let described = ThreadPoolBuilder::new()
            .topology(two_nodes())
            .pin(false)
            .policy(policy)
            .build()
            .unwrap();
        out.push((format!("2x2x2/{}", policy.name()), described));
    }
    out
}

fn quiet_panics<R>(f: impl FnOnce() -> R) -> R {
    // Keep expected panics out of the test output; the hook is process-wide,
    // so it is only replaced, never restored (other tests panic on purpose too).
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .copied()
                .unwrap_or_default();
            if !msg.starts_with("expected:") {
                default(info);
            }
        }));
    });
    f()
}

#[test]
fn join_computes_both_sides() {
    for (name, pool) in pools() {
        assert_eq!(pool.install(|| fib(20)), 6765, "{name}");
        let (a, b) = pool.join(|| 1, || "two");
        assert_eq!((a, b), (1, "two"), "{name}");
    }
}

#[test]
fn join_outside_any_pool_uses_the_global_pool() {
    assert_eq!(terroir::current_thread_index(), None);
    let (a, b) = terroir::join(terroir::current_thread_index, || fib(15));
    assert!(a.is_some(), "the first closure runs on a global worker");
    assert_eq!(b, 610);
}

#[test]
fn join_borrows_from_the_caller() {
    let data: Vec<u64> = (1..=10_000).collect();
    fn sum(s: &[u64]) -> u64 {
        if s.len() <= 64 {
            return s.iter().sum();
        }
        let (l, r) = s.split_at(s.len() / 2);
        let (a, b) = terroir::join(|| sum(l), || sum(r));
        a + b
    }
    for (name, pool) in pools() {
        assert_eq!(pool.install(|| sum(&data)), 50_005_000, "{name}");
    }
}

/// A panic in either closure reaches the caller only after the other
/// closure has finished; the pool keeps working afterwards.
#[test]
fn join_panic_propagates_after_the_sibling_finished() {
    quiet_panics(|| {
        for (name, pool) in pools() {
            for panic_in_a in [true, false] {
                let sibling_done = AtomicBool::new(false);
                let res = panic::catch_unwind(AssertUnwindSafe(|| {
                    pool.install(|| {
                        let slow_ok = || {
                            thread::sleep(Duration::from_millis(20));
                            sibling_done.store(true, Ordering::SeqCst);
                        };
                        let boom = || panic!("expected: join side panics");
                        if panic_in_a {
                            terroir::join(boom, slow_ok);
                        } else {
                            terroir::join(slow_ok, boom);
                        }
                    })
                }));
                let err = res.expect_err("the panic must propagate");
                assert_eq!(
                    err.downcast_ref::<&str>().copied(),
                    Some("expected: join side panics"),
                    "{name}"
                );
                assert!(
                    sibling_done.load(Ordering::SeqCst),
                    "{name}: sibling must finish first"
                );
                assert_eq!(pool.install(|| fib(15)), 610, "{name}: pool still works");
            }
        }
    });
}

/// When both closures panic, the first closure's panic is the one that
/// propagates (as in rayon).
#[test]
fn join_both_panic_propagates_the_first() {
    quiet_panics(|| {
        for (name, pool) in pools() {
            let err = panic::catch_unwind(AssertUnwindSafe(|| {
                pool.join(
                    || panic!("expected: a"),
                    || {
                        thread::sleep(Duration::from_millis(5));
                        panic!("expected: b")
                    },
                )
            }))
            .unwrap_err();
            assert_eq!(
                err.downcast_ref::<&str>().copied(),
                Some("expected: a"),
                "{name}"
            );
            assert_eq!(pool.install(|| fib(10)), 55, "{name}");
        }
    });
}

#[test]
fn install_runs_on_a_worker_and_reports_pool_size() {
    for (name, pool) in pools() {
        let (index, n) = pool.install(|| {
            (
                terroir::current_thread_index(),
                terroir::current_num_threads(),
            )
        });
        assert!(index.unwrap() < pool.current_num_threads(), "{name}");
        assert_eq!(n, pool.current_num_threads(), "{name}");
        assert_eq!(
            pool.current_thread_index(),
            None,
            "{name}: caller is outside"
        );
        assert!(pool.worker_cpu(pool.current_num_threads()).is_none());
        assert!(pool.worker_node_index(pool.current_num_threads()).is_none());
    }
}

/// `install` from a worker of another pool runs in the target pool, and the
/// calling worker keeps serving its own pool while it waits.
#[test]
fn install_across_pools() {
    let a = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let b = ThreadPoolBuilder::new()
        .topology(two_nodes())
        .pin(false)
        .build()
        .unwrap();
    let (outer, inner) = a.install(|| {
        let outer = a.current_thread_index();
        let inner = b.install(|| (a.current_thread_index(), b.current_thread_index()));
        (outer, inner)
    });
    assert!(outer.is_some());
    assert_eq!(inner.0, None, "inside b we are not a worker of a");
    assert!(inner.1.unwrap() < 8);
    // Nested joins across pools still compute correctly.
    let r = a.install(|| terroir::join(|| b.install(|| fib(18)), || fib(18)));
    assert_eq!(r, (2584, 2584));
}

#[test]
fn scope_waits_for_every_spawn_and_borrows() {
    for (name, pool) in pools() {
        let counter = AtomicUsize::new(0);
        let mut results = vec![0u64; 100];
        let ret = pool.scope(|s| {
            for (i, slot) in results.iter_mut().enumerate() {
                let counter = &counter;
                s.spawn(move |s| {
                    *slot = fib(10 + (i as u64 % 5));
                    // Nested spawns in the same scope.
                    s.spawn(move |_| {
                        counter.fetch_add(1, Ordering::Relaxed);
                    });
                });
            }
            "scope value"
        });
        assert_eq!(ret, "scope value", "{name}");
        assert_eq!(counter.load(Ordering::Relaxed), 100, "{name}");
        for (i, r) in results.iter().enumerate() {
            assert_eq!(*r, [55, 89, 144, 233, 377][i % 5], "{name}");
        }
    }
}

#[test]
fn scope_panic_propagates_after_all_spawns_finished() {
    quiet_panics(|| {
        for (name, pool) in pools() {
            let finished = AtomicUsize::new(0);
            let res = panic::catch_unwind(AssertUnwindSafe(|| {
                pool.scope(|s| {
                    for i in 0..20 {
                        let finished = &finished;
                        s.spawn(move |_| {
                            if i == 3 {
                                panic!("expected: scoped task panics");
                            }
                            thread::sleep(Duration::from_millis(1));
                            finished.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                })
            }));
            assert!(res.is_err(), "{name}");
            assert_eq!(finished.load(Ordering::SeqCst), 19, "{name}");
            assert_eq!(pool.install(|| fib(12)), 144, "{name}");
        }
    });
}

#[test]
fn in_place_scope_runs_on_the_calling_thread() {
    let me = thread::current().id();
    let mut hits = 0;
    let ran_here = terroir::in_place_scope(|s| {
        s.spawn(|_| {});
        hits += 1;
        thread::current().id() == me
    });
    assert!(ran_here);
    assert_eq!(hits, 1);
    // Inside a pool, the body stays on the same worker.
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    pool.install(|| {
        let outer = terroir::current_thread_index();
        let inner = terroir::in_place_scope(|_| terroir::current_thread_index());
        assert_eq!(outer, inner);
    });
}

#[test]
fn spawn_static_runs_and_keeps_the_pool_alive() {
    for (name, pool) in pools() {
        let (tx, rx) = mpsc::channel();
        for i in 0..64u64 {
            let tx = tx.clone();
            pool.spawn(move || tx.send(fib(i % 12)).unwrap());
        }
        drop(tx);
        let total: u64 = rx.iter().sum();
        let expect: u64 = (0..64u64)
            .map(|i| {
                let mut f = (0u64, 1u64);
                for _ in 0..i % 12 {
                    f = (f.1, f.0 + f.1);
                }
                f.0
            })
            .sum();
        assert_eq!(total, expect, "{name}");
    }
    // A spawn that outlives its ThreadPool handle still runs.
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let gate = Arc::new(Barrier::new(2));
    let g = gate.clone();
    pool.spawn(move || {
        g.wait();
        tx.send(terroir::current_thread_index()).unwrap();
    });
    drop(pool);
    gate.wait();
    assert!(rx.recv_timeout(Duration::from_secs(10)).unwrap().is_some());
}

#[test]
fn spawn_panic_goes_to_the_panic_handler() {
    quiet_panics(|| {
        let caught = Arc::new(Mutex::new(Vec::<String>::new()));
        let c = caught.clone();
        let pool = ThreadPoolBuilder::new()
            .num_threads(2)
            .panic_handler(move |p| {
                let msg = p.downcast_ref::<&str>().copied().unwrap_or("?").to_string();
                c.lock().unwrap().push(msg);
            })
            .build()
            .unwrap();
        pool.spawn(|| panic!("expected: spawned task panics"));
        // The pool keeps working; wait until the handler has seen the panic.
        let (tx, rx) = mpsc::channel();
        for _ in 0..100 {
            if !caught.lock().unwrap().is_empty() {
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
        pool.spawn(move || tx.send(fib(10)).unwrap());
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 55);
        assert_eq!(*caught.lock().unwrap(), ["expected: spawned task panics"]);
    });
}

#[test]
fn thread_names_and_stack_size() {
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(|i| format!("terroir-test-{i}"))
        .stack_size(8 << 20)
        .build()
        .unwrap();
    let name = pool.install(|| thread::current().name().map(str::to_owned));
    let index = pool.install(|| terroir::current_thread_index().unwrap());
    assert!(name.unwrap().starts_with("terroir-test-"));
    assert!(index < 2);
    // 8 MiB of stack: a recursion using ~4 MiB must not overflow.
    fn deep(n: u32) -> u32 {
        let pad = std::hint::black_box([n as u8; 1024]);
        if n == 0 {
            return 0;
        }
        deep(n - 1) + u32::from(pad[1] == n as u8)
    }
    assert_eq!(pool.install(|| deep(4000)), 4000);
}

#[test]
fn described_topology_places_workers_on_every_node() {
    let pool = ThreadPoolBuilder::new()
        .topology(two_nodes())
        .pin(false)
        .build()
        .unwrap();
    assert_eq!(pool.current_num_threads(), 8);
    assert!(!pool.is_pinned());
    let mut per_node = [0usize; 2];
    let mut cpus = Vec::new();
    for i in 0..8 {
        per_node[pool.worker_node_index(i).unwrap()] += 1;
        cpus.push(pool.worker_cpu(i).unwrap());
    }
    assert_eq!(per_node, [4, 4]);
    cpus.sort_unstable();
    assert_eq!(cpus, (0..8).collect::<Vec<u32>>(), "one worker per PU");
}

#[test]
fn pinning_to_cpus_this_machine_lacks_is_a_typed_error() {
    let allowed = terroir::numa::allowed_cpus().unwrap();
    let topo = Topology::builder()
        .nodes(2)
        .pus_per_l3(2048)
        .build()
        .unwrap();
    let err = ThreadPoolBuilder::new()
        .topology(topo)
        .pin(true)
        .build()
        .unwrap_err();
    match &err {
        ThreadPoolBuildError::Pin { cpu, worker, .. } => {
            assert!(!allowed.contains(*cpu), "CPU {cpu} is allowed here");
            assert!(*worker < 4096);
        }
        other => panic!("expected a Pin error, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("pin(false)"), "{msg}");
}

#[test]
fn oversubscribed_pool_works() {
    for &policy in Policy::ALL {
        let pool = ThreadPoolBuilder::new()
            .num_threads(16)
            .policy(policy)
            .build()
            .unwrap();
        assert_eq!(pool.current_num_threads(), 16);
        assert_eq!(pool.install(|| fib(20)), 6765);
    }
}

#[test]
fn many_pools_built_and_dropped() {
    for i in 0..50 {
        let pool = ThreadPoolBuilder::new()
            .num_threads(1 + i % 4)
            .build()
            .unwrap();
        assert_eq!(pool.install(|| fib(8)), 21);
    }
}

// ------------------------------------------------------------ property tests

/// A random fork-join program: evaluated by the pool and sequentially, the
/// results must agree; a `Panic` anywhere must propagate and leave the pool
/// usable.
#[derive(Clone, Debug)]
enum Prog {
    Leaf(u32),
    Panic,
    Join(Box<Prog>, Box<Prog>),
    Scope(Vec<Prog>),
}

fn prog() -> impl Strategy<Value = Prog> {
    let leaf = prop_oneof![
        20 => any::<u32>().prop_map(|v| Prog::Leaf(v % 1000)),
        1 => Just(Prog::Panic),
    ];
    leaf.prop_recursive(6, 200, 6, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Prog::Join(Box::new(a), Box::new(b))),
            prop::collection::vec(inner, 0..6).prop_map(Prog::Scope),
        ]
    })
}

/// `Some(sum)` or `None` when the program panics.
fn expected(p: &Prog) -> Option<u64> {
    match p {
        Prog::Leaf(v) => Some(u64::from(*v)),
        Prog::Panic => None,
        Prog::Join(a, b) => Some(expected(a)? + expected(b)?),
        Prog::Scope(ps) => ps.iter().map(expected).sum(),
    }
}

fn run(p: &Prog) -> u64 {
    match p {
        Prog::Leaf(v) => u64::from(*v),
        Prog::Panic => panic!("expected: generated panic"),
        Prog::Join(a, b) => {
            let (x, y) = terroir::join(|| run(a), || run(b));
            x + y
        }
        Prog::Scope(ps) => {
            let total = AtomicUsize::new(0);
            terroir::scope(|s| {
                for p in ps {
                    let total = &total;
                    s.spawn(move |_| {
                        total.fetch_add(run(p) as usize, Ordering::Relaxed);
                    });
                }
            });
            total.into_inner() as u64
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn random_programs_match_sequential(p in prog(), policy_i in 0..Policy::ALL.len(), threads in 1usize..5) {
        let pool = ThreadPoolBuilder::new()
            .topology(two_nodes())
            .pin(false)
            .num_threads(threads)
            .policy(Policy::ALL[policy_i])
            .build()
            .unwrap();
        let got = quiet_panics(|| panic::catch_unwind(AssertUnwindSafe(|| pool.install(|| run(&p)))).ok());
        prop_assert_eq!(got, expected(&p));
        prop_assert_eq!(pool.install(|| fib(10)), 55);
    }
}

/// Workers that went to sleep during a sequential phase must help with a
/// `join`-only phase that follows: a sleeping worker makes no new steal
/// requests, so the request it left before parking, or the joiner's check
/// for unwatched sleepers, must bring it back.
#[test]
fn join_after_an_idle_phase_runs_in_parallel() {
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let (a, b) = pool.install(|| {
        // Long enough for the other worker to stop searching and park.
        std::thread::sleep(std::time::Duration::from_millis(50));
        terroir::join(
            || {
                std::thread::sleep(std::time::Duration::from_millis(100));
                terroir::current_thread_index()
            },
            || {
                std::thread::sleep(std::time::Duration::from_millis(100));
                terroir::current_thread_index()
            },
        )
    });
    assert_ne!(a, b, "both halves of the join ran on worker {a:?}");
}

#[test]
fn deque_order_decides_which_spawned_task_runs_first() {
    use terroir::DequeOrder;
    for (order, want) in [
        (DequeOrder::Lifo, vec![4, 3, 2, 1, 0]),
        (DequeOrder::Fifo, vec![0, 1, 2, 3, 4]),
    ] {
        // One worker: nobody steals, so the order is the deque's alone.
        let pool = ThreadPoolBuilder::new()
            .num_threads(1)
            .deque_order(order)
            .build()
            .unwrap();
        let ran = Mutex::new(Vec::new());
        pool.scope(|s| {
            for i in 0..5 {
                let ran = &ran;
                s.spawn(move |_| ran.lock().unwrap().push(i));
            }
        });
        assert_eq!(ran.into_inner().unwrap(), want, "{order:?}");
        assert_eq!(order.name(), format!("{order:?}").to_lowercase());
    }
}

/// Lost wake-up regression (seen in the 4-node guest): n jobs spawned from
/// one worker, each waiting until all n have started. Every job needs its
/// own worker, so the sleepers must all be woken while the spawner is busy
/// with the first job. A searcher that registered to sleep and then took a
/// job in its last look used to stop counting as a searcher without waking
/// anyone; the remaining jobs then sat in the spawner's deque.
#[test]
fn n_jobs_that_wait_for_each_other_get_n_workers() {
    let patience = Duration::from_secs(10);
    for round in 0..400 {
        let n = [8, 16][round % 2];
        // A fresh pool half of the time: its workers are starting, searching
        // and parking while the jobs arrive, as in the guest test.
        let pool = terroir::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap();
        for _ in 0..3 {
            let started = AtomicUsize::new(0);
            let deadline = Instant::now() + patience;
            let late = AtomicUsize::new(0);
            pool.scope(|s| {
                for _ in 0..n {
                    s.spawn(|_| {
                        started.fetch_add(1, Ordering::SeqCst);
                        while started.load(Ordering::SeqCst) < n {
                            if Instant::now() > deadline {
                                late.fetch_add(1, Ordering::SeqCst);
                                return;
                            }
                            std::thread::sleep(Duration::from_micros(50));
                        }
                    });
                }
            });
            assert_eq!(
                late.load(Ordering::SeqCst),
                0,
                "round {round}: {n} jobs did not all start on {n} workers within {patience:?}"
            );
        }
    }
}

/// Each worker's affinity is what [`ThreadPool::worker_cpus`] says, for
/// every [`Pinning`]: its PU, its PU's L3 group or its node, and the
/// default is the L3 group.
#[test]
fn workers_are_pinned_at_the_granularity_asked() {
    use terroir::Pinning;
    let topo = Topology::detect().expect("this machine's topology");
    let affinities = |pool: &ThreadPool| {
        let mut seen = pool.broadcast(|ctx| (ctx.index(), terroir::numa::allowed_cpus().unwrap()));
        seen.sort_by_key(|(i, _)| *i);
        seen
    };
    let default = ThreadPoolBuilder::new()
        .topology(topo.clone())
        .pin(true)
        .build()
        .unwrap();
    if std::env::var_os("TERROIR_PIN").is_none() {
        assert_eq!(default.pinning(), Some(Pinning::Cache));
    }
    for (pinning, name) in [
        (Pinning::Pu, "pu"),
        (Pinning::Cache, "cache"),
        (Pinning::Node, "node"),
    ] {
        assert_eq!(pinning.name(), name);
        let pool = ThreadPoolBuilder::new()
            .topology(topo.clone())
            .pinning(pinning)
            .build()
            .unwrap();
        assert!(pool.is_pinned());
        assert_eq!(pool.pinning(), Some(pinning));
        for (i, allowed) in affinities(&pool) {
            let cpu = pool.worker_cpu(i).unwrap();
            let expected: Vec<u32> = match pinning {
                Pinning::Pu => vec![cpu],
                Pinning::Cache => {
                    let pu = topo.pus().iter().find(|p| p.os_index() == cpu).unwrap();
                    topo.l3_groups()[pu.l3_group_index()]
                        .cpus()
                        .iter()
                        .collect()
                }
                _ => topo.nodes()[pool.worker_node_index(i).unwrap()]
                    .cpus()
                    .iter()
                    .collect(),
            };
            assert_eq!(
                allowed.iter().collect::<Vec<_>>(),
                expected,
                "{pinning:?}, worker {i}"
            );
            assert_eq!(
                pool.worker_cpus(i).as_ref(),
                Some(&allowed),
                "{pinning:?}, worker {i}"
            );
            assert!(
                allowed.contains(cpu),
                "{pinning:?}: worker {i}'s seat is one of its CPUs"
            );
        }
        assert_eq!(pool.worker_cpus(pool.current_num_threads()), None);
    }
    let unpinned = ThreadPoolBuilder::new()
        .topology(topo)
        .pin(false)
        .build()
        .unwrap();
    assert_eq!((unpinned.pinning(), unpinned.worker_cpus(0)), (None, None));
}

/// Cache-group and node pinning differ where a node has several cache
/// groups: a described node of two one-PU groups over CPUs 0 and 1.
#[test]
fn cache_pinning_keeps_a_worker_in_its_group_and_node_pinning_in_its_node() {
    use terroir::Pinning;
    let allowed = terroir::numa::allowed_cpus().unwrap();
    if !(allowed.contains(0) && allowed.contains(1)) {
        eprintln!("CPUs 0 and 1 are not both usable here: nothing to compare");
        return;
    }
    let topo = Topology::builder()
        .nodes(1)
        .l3_per_node(2)
        .pus_per_l3(1)
        .build()
        .unwrap();
    for (pinning, expect_own) in [(Pinning::Cache, true), (Pinning::Node, false)] {
        let pool = ThreadPoolBuilder::new()
            .topology(topo.clone())
            .pinning(pinning)
            .build()
            .unwrap();
        let mut seen = pool.broadcast(|ctx| (ctx.index(), terroir::numa::allowed_cpus().unwrap()));
        seen.sort_by_key(|(i, _)| *i);
        assert_eq!(seen.len(), 2);
        for (i, bound) in seen {
            let cpu = pool.worker_cpu(i).unwrap();
            let expected: Vec<u32> = if expect_own { vec![cpu] } else { vec![0, 1] };
            assert_eq!(
                bound.iter().collect::<Vec<_>>(),
                expected,
                "{pinning:?}, worker {i}"
            );
            assert_eq!(pool.worker_cpus(i), Some(bound), "{pinning:?}, worker {i}");
        }
    }
}

/// A calling thread adopted as worker 0 keeps its affinity, and the pool
/// says so.
#[test]
fn an_adopted_calling_thread_is_not_reported_pinned() {
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .use_current_thread()
        .pin(true)
        .build()
        .unwrap();
    assert_eq!(
        pool.worker_cpus(0),
        None,
        "worker 0 is this thread, never pinned"
    );
    assert!(pool.worker_cpus(1).is_some());
}
