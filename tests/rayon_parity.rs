//! The parts of rayon-core's API beyond `join`/`scope`/`spawn`, with
//! rayon-core's semantics: `join_context`, the FIFO spawns and scopes
//! (exact orders on one worker, where nothing is stolen), the pool's
//! in-place scopes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Barrier, Mutex};
use std::time::Duration;

use terroir::{ThreadPool, ThreadPoolBuilder};

fn one_worker() -> ThreadPool {
    ThreadPoolBuilder::new().num_threads(1).build().unwrap()
}

// ---- join_context ----------------------------------------------------

#[test]
fn join_context_from_outside_every_pool_migrates_both() {
    let (a, b) = terroir::join_context(|a| a.migrated(), |b| b.migrated());
    assert!(a && b);
}

#[test]
fn join_context_on_one_worker_migrates_nothing() {
    let pool = one_worker();
    let got = pool.install(|| {
        terroir::join_context(
            |a| (a.migrated(), terroir::current_thread_index()),
            |b| (b.migrated(), terroir::current_thread_index()),
        )
    });
    assert_eq!(got, ((false, Some(0)), (false, Some(0))));
}

#[test]
fn join_context_b_is_takeable_while_a_blocks_and_then_migrates() {
    // `a` waits until `b` has run: only another worker can run it, at
    // once (no later `join` of the owner is needed to expose it).
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for _ in 0..20 {
        let (tx, rx) = mpsc::channel();
        let ((a_moved, a_on), (b_moved, b_on)) = pool.install(|| {
            terroir::join_context(
                move |a| {
                    rx.recv_timeout(Duration::from_secs(60))
                        .expect("b ran meanwhile");
                    (a.migrated(), terroir::current_thread_index())
                },
                move |b| {
                    tx.send(()).unwrap();
                    (b.migrated(), terroir::current_thread_index())
                },
            )
        });
        assert!(!a_moved && b_moved);
        assert_ne!(a_on, b_on);
    }
}

#[test]
fn join_context_runs_b_after_a_panics_and_propagates_a() {
    let pool = one_worker();
    let ran_b = AtomicUsize::new(0);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.install(|| {
            terroir::join_context(
                |_| -> () { std::panic::panic_any("a fails") },
                |_| ran_b.fetch_add(1, Ordering::SeqCst),
            )
        })
    }));
    let payload = result.unwrap_err();
    assert_eq!(*payload.downcast_ref::<&str>().unwrap(), "a fails");
    assert_eq!(ran_b.load(Ordering::SeqCst), 1);
}

#[test]
fn join_context_runs_what_a_spawned_above_b_first() {
    // On one worker, a LIFO spawn made by `a` sits above `b` on the deque:
    // it runs before `b` is taken back.
    let pool = one_worker();
    let order = Mutex::new(Vec::new());
    pool.scope(|s| {
        terroir::join_context(
            |_| s.spawn(|_| order.lock().unwrap().push("spawned by a")),
            |_| order.lock().unwrap().push("b"),
        );
    });
    assert_eq!(order.into_inner().unwrap(), ["spawned by a", "b"]);
}

// ---- FIFO order (one worker: nothing is stolen) ----------------------

#[test]
fn global_fifo_and_lifo_spawns_interleave_by_the_deque() {
    // Stand-ins of FIFO spawns share the deque with LIFO spawns: the deque
    // says when (newest first), the worker's FIFO says which job.
    let pool = one_worker();
    let (tx, rx) = mpsc::channel();
    pool.install(|| {
        for i in 0..3 {
            let (f, l) = (tx.clone(), tx.clone());
            terroir::spawn_fifo(move || f.send(format!("fifo{i}")).unwrap());
            terroir::spawn(move || l.send(format!("lifo{i}")).unwrap());
        }
    });
    drop(tx);
    let got: Vec<String> = rx.iter().collect();
    // deque, oldest to newest: S l0 S l1 S l2
    assert_eq!(
        got,
        ["lifo2", "fifo0", "lifo1", "fifo1", "lifo0", "fifo2"],
        "{got:?}"
    );
}

#[test]
fn pool_spawn_fifo_keeps_spawn_order() {
    let pool = one_worker();
    let (tx, rx) = mpsc::channel();
    pool.install(|| {
        for i in 0..8 {
            let tx = tx.clone();
            pool.spawn_fifo(move || tx.send(i).unwrap());
        }
    });
    drop(tx);
    assert_eq!(rx.iter().collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
}

#[test]
fn a_fifo_scope_walks_its_task_tree_breadth_first() {
    let pool = one_worker();
    let order = Mutex::new(Vec::new());
    pool.scope_fifo(|s| {
        for t in 0..3 {
            let order = &order;
            s.spawn_fifo(move |s| {
                order.lock().unwrap().push(format!("t{t}"));
                for c in 0..2 {
                    s.spawn_fifo(move |_| order.lock().unwrap().push(format!("t{t}.{c}")));
                }
            });
        }
    });
    let got = order.into_inner().unwrap();
    assert_eq!(
        got,
        ["t0", "t1", "t2", "t0.0", "t0.1", "t1.0", "t1.1", "t2.0", "t2.1"]
    );
}

#[test]
fn a_lifo_scope_inside_a_fifo_scope_runs_the_outer_fifo_while_it_waits() {
    // While the inner (LIFO) scope waits, it pops the deque: one of the
    // stand-ins there belongs to the outer FIFO scope and runs its oldest
    // task.
    let pool = one_worker();
    let order = Mutex::new(Vec::new());
    pool.install(|| {
        let order = &order;
        let push = move |name: &'static str| move |_: &_| order.lock().unwrap().push(name);
        terroir::scope_fifo(|fifo| {
            fifo.spawn_fifo(move |_| order.lock().unwrap().push("a1"));
            terroir::scope(|lifo| {
                lifo.spawn(push("b1"));
                fifo.spawn_fifo(move |_| order.lock().unwrap().push("a2"));
                lifo.spawn(push("b2"));
            });
            fifo.spawn_fifo(move |_| order.lock().unwrap().push("a3"));
        });
    });
    // deque while the inner scope waits (oldest first): S b1 S b2.
    assert_eq!(order.into_inner().unwrap(), ["b2", "a1", "b1", "a2", "a3"]);
}

#[test]
fn two_fifo_scopes_keep_separate_fifos() {
    // A stand-in runs the oldest task of its own scope's FIFO, not of
    // another scope's.
    let pool = one_worker();
    let order = Mutex::new(Vec::new());
    pool.install(|| {
        let order = &order;
        terroir::scope_fifo(|outer| {
            outer.spawn_fifo(move |_| order.lock().unwrap().push("outer0"));
            terroir::scope_fifo(|inner| {
                inner.spawn_fifo(move |_| order.lock().unwrap().push("inner0"));
                outer.spawn_fifo(move |_| order.lock().unwrap().push("outer1"));
                inner.spawn_fifo(move |_| order.lock().unwrap().push("inner1"));
            });
        });
    });
    // deque (oldest first): So Si So Si. The inner scope waits: pops Si
    // (inner0), So (outer0), Si (inner1): done; then So (outer1).
    assert_eq!(
        order.into_inner().unwrap(),
        ["inner0", "outer0", "inner1", "outer1"]
    );
}

#[test]
fn fifo_scopes_finish_every_task_on_many_workers() {
    let pool = ThreadPoolBuilder::new()
        .num_threads(4)
        .pin(false)
        .build()
        .unwrap();
    let count = AtomicUsize::new(0);
    pool.scope_fifo(|s| {
        for _ in 0..100 {
            s.spawn_fifo(|s| {
                for _ in 0..10 {
                    s.spawn_fifo(|_| {
                        count.fetch_add(1, Ordering::Relaxed);
                    });
                }
            });
        }
    });
    assert_eq!(count.into_inner(), 1000);
    // Also from outside any worker: the tasks are injected.
    let count = AtomicUsize::new(0);
    pool.in_place_scope_fifo(|s| {
        for _ in 0..50 {
            s.spawn_fifo(|_| {
                count.fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    assert_eq!(count.into_inner(), 50);
}

#[test]
fn a_fifo_task_panic_reaches_the_scope_after_the_others_ran() {
    let pool = one_worker();
    let ran = AtomicUsize::new(0);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.scope_fifo(|s| {
            s.spawn_fifo(|_| std::panic::panic_any("fifo task fails"));
            for _ in 0..3 {
                s.spawn_fifo(|_| {
                    ran.fetch_add(1, Ordering::SeqCst);
                });
            }
        })
    }));
    assert_eq!(
        *result.unwrap_err().downcast_ref::<&str>().unwrap(),
        "fifo task fails"
    );
    assert_eq!(ran.into_inner(), 3);
}

// ---- in-place scopes of a pool ---------------------------------------

#[test]
fn a_pools_in_place_scope_runs_the_body_on_the_caller() {
    let pool = one_worker();
    let caller = std::thread::current().id();
    let (tx, rx) = mpsc::channel();
    let body_thread = pool.in_place_scope(|s| {
        // The only worker is free: it runs the task while the body blocks.
        s.spawn(move |_| tx.send(terroir::current_thread_index()).unwrap());
        assert_eq!(rx.recv_timeout(Duration::from_secs(60)).unwrap(), Some(0));
        std::thread::current().id()
    });
    assert_eq!(body_thread, caller);
}

#[test]
fn an_in_place_scope_of_another_pool_runs_on_a_worker_waiting_by_stealing() {
    // A worker of `a` opens an in-place scope of `b`, whose tasks wait for
    // a task of `a`: the waiting worker must keep running `a`'s work.
    let a = one_worker();
    let b = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let done = AtomicUsize::new(0);
    let barrier = Barrier::new(2);
    a.install(|| {
        a.scope(|sa| {
            b.in_place_scope(|sb| {
                sb.spawn(|_| {
                    barrier.wait();
                    done.fetch_add(1, Ordering::SeqCst);
                });
                // Only `a`'s worker, which is waiting in this scope, can
                // run this one.
                sa.spawn(|_| {
                    barrier.wait();
                    done.fetch_add(1, Ordering::SeqCst);
                });
            });
        });
    });
    assert_eq!(done.into_inner(), 2);
}

// ---- broadcast ---------------------------------------------------------

#[test]
fn broadcast_runs_once_per_worker_and_returns_in_index_order() {
    let pool = ThreadPoolBuilder::new().num_threads(5).build().unwrap();
    let threads = Mutex::new(Vec::new());
    let from_outside = pool.broadcast(|ctx| {
        threads.lock().unwrap().push(std::thread::current().id());
        assert_eq!(terroir::current_thread_index(), Some(ctx.index()));
        (ctx.index(), ctx.num_threads())
    });
    assert_eq!(from_outside, (0..5).map(|i| (i, 5)).collect::<Vec<_>>());
    let mut threads = threads.into_inner().unwrap();
    threads.sort_unstable_by_key(|t| format!("{t:?}"));
    threads.dedup();
    assert_eq!(threads.len(), 5, "five different threads");
    // From a worker of the pool, which runs its own part while it waits.
    let from_inside = pool.install(|| terroir::broadcast(|ctx| ctx.index() * 2));
    assert_eq!(from_inside, [0, 2, 4, 6, 8]);
}

#[test]
fn a_broadcast_panic_propagates_after_every_worker_ran() {
    let pool = ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    let ran = AtomicUsize::new(0);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.broadcast(|ctx| {
            ran.fetch_add(1, Ordering::SeqCst);
            if ctx.index() >= 2 {
                std::panic::panic_any(ctx.index());
            }
        })
    }));
    assert_eq!(ran.into_inner(), 4);
    // The first panic in index order.
    assert_eq!(*result.unwrap_err().downcast_ref::<usize>().unwrap(), 2);
}

#[test]
fn spawn_broadcast_panics_go_to_the_handler_once_per_panicking_worker() {
    let (panic_tx, panics) = mpsc::channel();
    let panic_tx = Mutex::new(panic_tx);
    let pool = ThreadPoolBuilder::new()
        .num_threads(5)
        .panic_handler(move |e| {
            let index = *e.downcast_ref::<usize>().unwrap();
            panic_tx.lock().unwrap().send(index).unwrap();
        })
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    pool.spawn_broadcast(move |ctx| {
        tx.lock().unwrap().send(ctx.index()).unwrap();
        if ctx.index() % 2 == 1 {
            std::panic::panic_any(ctx.index());
        }
    });
    drop(pool); // the workers finish the broadcast first
    let mut ran: Vec<usize> = rx.iter().collect();
    ran.sort_unstable();
    assert_eq!(ran, [0, 1, 2, 3, 4]);
    let mut panicked: Vec<usize> = panics.iter().collect();
    panicked.sort_unstable();
    assert_eq!(panicked, [1, 3]);
}

#[test]
fn a_spawned_broadcast_runs_before_a_later_broadcast_on_every_worker() {
    let pool = ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    for _ in 0..20 {
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        pool.spawn_broadcast(move |ctx| tx.lock().unwrap().send(ctx.index()).unwrap());
        pool.broadcast(|_| {});
        // Every worker ran the spawned one before its part of the second.
        let mut got: Vec<usize> = rx.try_iter().collect();
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2]);
    }
}

#[test]
fn broadcasts_between_two_pools_do_not_deadlock() {
    let small = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let big = ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    let count = AtomicUsize::new(0);
    small.install(|| {
        big.broadcast(|_| {
            small.broadcast(|_| {
                count.fetch_add(1, Ordering::Relaxed);
            })
        })
    });
    assert_eq!(count.into_inner(), 2 * 3);
}

#[test]
fn concurrent_broadcasts_reach_every_worker_in_one_order() {
    // Each broadcast's parts wait for one another (a barrier of all
    // workers): if two broadcasts reached the workers in different orders,
    // some workers would wait in one barrier and the rest in the other.
    let pool = ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    for _ in 0..50 {
        let (first, second) = (Barrier::new(3), Barrier::new(3));
        std::thread::scope(|s| {
            s.spawn(|| pool.broadcast(|_| first.wait()));
            s.spawn(|| pool.broadcast(|_| second.wait()));
        });
    }
}

#[test]
fn a_scope_broadcast_reaches_every_worker_while_the_caller_waits_with_them() {
    let pool = ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    let all = Barrier::new(4); // three workers and the caller at once
    pool.in_place_scope(|s| {
        s.spawn_broadcast(|_, _| {
            all.wait();
        });
        all.wait();
    });
}

#[test]
fn nested_scope_broadcasts_run_n_squared_times() {
    let pool = ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    let count = AtomicUsize::new(0);
    pool.scope_fifo(|s| {
        s.spawn_broadcast(|s, _| {
            s.spawn_broadcast(|_, ctx| {
                assert!(ctx.index() < ctx.num_threads());
                count.fetch_add(1, Ordering::Relaxed);
            });
        });
    });
    assert_eq!(count.into_inner(), 9);
}

#[test]
fn a_scope_broadcast_panic_reaches_the_scope_after_every_worker_ran() {
    let pool = ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    let ran = AtomicUsize::new(0);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.scope(|s| {
            s.spawn_broadcast(|_, ctx| {
                ran.fetch_add(1, Ordering::SeqCst);
                if ctx.index() == 1 {
                    std::panic::panic_any("worker 1 fails");
                }
            })
        })
    }));
    assert_eq!(ran.into_inner(), 4);
    assert_eq!(
        *result.unwrap_err().downcast_ref::<&str>().unwrap(),
        "worker 1 fails"
    );
}

// ---- yielding and pending tasks ----------------------------------------

#[test]
fn yielding_runs_pending_work_of_the_worker() {
    let pool = one_worker();
    assert_eq!(pool.yield_now(), None, "not a worker of the pool");
    assert_eq!(pool.yield_local(), None);
    assert_eq!(pool.current_thread_has_pending_tasks(), None);
    let ran = AtomicUsize::new(0);
    pool.scope(|s| {
        assert_eq!(terroir::yield_local(), Some(terroir::Yield::Idle));
        s.spawn(|_| {
            ran.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(pool.current_thread_has_pending_tasks(), Some(true));
        assert_eq!(terroir::yield_local(), Some(terroir::Yield::Executed));
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert_eq!(pool.current_thread_has_pending_tasks(), Some(false));
        s.spawn(|_| {
            ran.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(pool.yield_now(), Some(terroir::Yield::Executed));
        assert_eq!(pool.yield_now(), Some(terroir::Yield::Idle));
    });
    assert_eq!(ran.into_inner(), 2);
    // Another pool's worker is not this pool's.
    let other = one_worker();
    assert_eq!(other.install(|| pool.yield_now()), None);
}

#[test]
fn yield_local_runs_a_broadcast_part_waiting_for_this_worker() {
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let me = pool.install(|| {
        let me = terroir::current_thread_index().unwrap();
        pool.spawn_broadcast(move |ctx| tx.lock().unwrap().send(ctx.index()).unwrap());
        // This worker's part waits in its inbox until it yields (or idles).
        let start = std::time::Instant::now();
        loop {
            if terroir::yield_local() == Some(terroir::Yield::Executed) {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(60));
        }
        me
    });
    // Both parts ran (the receiver outlives them: a send to a dropped
    // receiver would panic in a pool without a panic handler).
    let mut ran: Vec<usize> = rx.iter().take(2).collect();
    ran.sort_unstable();
    assert_eq!(ran, [0, 1]);
    assert!(me < 2);
}

#[test]
fn a_private_join_continuation_counts_as_pending() {
    let pool = one_worker();
    let pending = pool.install(|| {
        terroir::join(
            terroir::current_thread_has_pending_tasks,
            terroir::current_thread_has_pending_tasks,
        )
    });
    // While `a` runs, `b` waits (private); while `b` runs, nothing does.
    assert_eq!(pending, (Some(true), Some(false)));
}
