//! `TaskGroup`: where tasks start, waits that work instead of blocking,
//! waits that could never end refused, panics, and races between threads.

mod common;
use common::{join_until, spin_until};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::Duration;

use terroir::{Policy, TaskGroup, ThreadPool, ThreadPoolBuilder, WouldDeadlock};

fn pool(threads: usize) -> ThreadPool {
    ThreadPoolBuilder::new()
        .num_threads(threads)
        .pin(false)
        .build()
        .unwrap()
}

/// A binary tree of tasks, each spawning its children into the group
/// that runs it: 2^(depth+1) - 1 tasks.
fn grow(depth: u32, count: Arc<AtomicU64>, group: &TaskGroup) {
    count.fetch_add(1, Ordering::Relaxed);
    if depth > 0 {
        for _ in 0..2 {
            let count = Arc::clone(&count);
            group.spawn(move |g| grow(depth - 1, count, g));
        }
    }
}

#[test]
fn tasks_spawned_by_tasks_during_a_wait_are_waited_for() {
    let pool = pool(2);
    let count = Arc::new(AtomicU64::new(0));
    let group = pool.task_group();
    let c = Arc::clone(&count);
    group.spawn(move |g| grow(12, c, g));
    group.wait().unwrap();
    assert_eq!(count.load(Ordering::Relaxed), (1 << 13) - 1);
    // Waiting again: nothing left.
    group.wait().unwrap();
}

#[test]
fn spawns_from_workers_wait_for_the_next_wait_and_run_on_the_waiter() {
    let pool = pool(2);
    let (tx, rx) = mpsc::channel();
    pool.install(|| {
        let group = pool.task_group();
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..10 {
            let ran = Arc::clone(&ran);
            group.spawn(move |_| {
                ran.fetch_add(1, Ordering::Relaxed);
            });
        }
        // Queued on a worker of the pool: nothing has started yet.
        thread::sleep(Duration::from_millis(20));
        assert_eq!(ran.load(Ordering::Relaxed), 0);
        group.wait().unwrap();
        tx.send(ran.load(Ordering::Relaxed)).unwrap();
    });
    assert_eq!(rx.recv().unwrap(), 10);
}

#[test]
fn spawns_from_outside_the_pool_start_at_once() {
    let pool = pool(2);
    let group = pool.task_group();
    let started = Arc::new(AtomicBool::new(false));
    let s = Arc::clone(&started);
    group.spawn(move |_| s.store(true, Ordering::Release));
    // No wait: a worker runs it anyway.
    spin_until(&started);
    group.wait().unwrap();
}

#[test]
fn dropping_a_group_waits_for_its_tasks() {
    let pool = pool(2);
    let count = Arc::new(AtomicU64::new(0));
    {
        let group = TaskGroup::new(&pool);
        let c = Arc::clone(&count);
        group.spawn(move |g| grow(8, c, g));
    }
    assert_eq!(count.load(Ordering::Relaxed), (1 << 9) - 1);
}

#[test]
fn a_group_keeps_its_pool_running_after_the_pool_is_dropped() {
    let pool = pool(2);
    let group = pool.task_group();
    drop(pool);
    let count = Arc::new(AtomicU64::new(0));
    let c = Arc::clone(&count);
    group.spawn(move |g| grow(6, c, g));
    group.wait().unwrap();
    assert_eq!(count.load(Ordering::Relaxed), (1 << 7) - 1);
}

/// Groups nested in groups' tasks on a small pool: every waiting worker
/// runs work instead of blocking, so the tree completes.
#[test]
fn nested_groups_on_a_small_pool_complete() {
    fn nested(depth: u32, pool: &Arc<ThreadPool>, count: &Arc<AtomicU64>) {
        count.fetch_add(1, Ordering::Relaxed);
        if depth == 0 {
            return;
        }
        let inner = pool.task_group();
        for _ in 0..3 {
            let (pool, count) = (Arc::clone(pool), Arc::clone(count));
            inner.spawn(move |_| nested(depth - 1, &pool, &count));
        }
        inner.wait().unwrap();
    }
    let pool = Arc::new(pool(2));
    let count = Arc::new(AtomicU64::new(0));
    let outer = pool.task_group();
    let (p, c) = (Arc::clone(&pool), Arc::clone(&count));
    outer.spawn(move |_| nested(6, &p, &c));
    outer.wait().unwrap();
    // 1 + 3 + ... + 3^6
    assert_eq!(count.load(Ordering::Relaxed), (3u64.pow(7) - 1) / 2);
}

/// Workers of the group's pool, workers of another pool and a thread
/// outside both wait for one group while its tasks (many strictly placed
/// on one worker) spawn more into it: every task runs once, and every wait
/// ends (some are refused when they stack on the group's own work).
#[test]
fn waits_from_workers_of_two_pools_and_outside_end() {
    let p = Arc::new(
        ThreadPoolBuilder::new()
            .num_threads(3)
            .pin(false)
            .policy(Policy::StrictLocality)
            .build()
            .unwrap(),
    );
    let other = pool(2);
    let spawned = Arc::new(AtomicU64::new(0));
    let ran = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    for round in 0..30 {
        let g = Arc::new(p.task_group());
        for i in 0..12usize {
            let place = p.worker(i % 3).unwrap();
            let (ran, spawned) = (Arc::clone(&ran), Arc::clone(&spawned));
            spawned.fetch_add(1, Ordering::Relaxed);
            g.spawn_on(&place, move |g| {
                if i % 2 == 1 {
                    spawned.fetch_add(1, Ordering::Relaxed);
                    let ran = Arc::clone(&ran);
                    g.spawn(move |_| {
                        ran.fetch_add(1, Ordering::Relaxed);
                    });
                }
                ran.fetch_add(1, Ordering::Relaxed);
            });
        }
        let waiter = |g: &Arc<TaskGroup>| {
            let (g, refused) = (Arc::clone(g), Arc::clone(&refused));
            move |_: &TaskGroup| match g.wait() {
                Ok(()) => {}
                Err(WouldDeadlock::StackedOnGroup | WouldDeadlock::InsideOwnTask) => {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => panic!("{e}"),
            }
        };
        let here = p.task_group();
        let there = other.task_group();
        for i in 0..6 {
            here.spawn_on(&p.worker(i % 3).unwrap(), waiter(&g));
            there.spawn(waiter(&g));
        }
        if round % 2 == 0 {
            g.wait().unwrap();
        }
        here.wait().unwrap();
        there.wait().unwrap();
        g.wait().unwrap();
        assert_eq!(
            ran.load(Ordering::Relaxed),
            spawned.load(Ordering::Relaxed),
            "round {round}"
        );
    }
    eprintln!("refused waits: {}", refused.load(Ordering::Relaxed));
}

#[test]
fn strictly_placed_tasks_run_on_their_worker() {
    let p = ThreadPoolBuilder::new()
        .num_threads(2)
        .pin(false)
        .policy(Policy::Locality)
        .build()
        .unwrap();
    let wrong = Arc::new(AtomicU64::new(0));
    let ran = Arc::new(AtomicU64::new(0));
    let check = move |w: usize, wrong: &AtomicU64, ran: &AtomicU64| {
        if terroir::current_thread_index() != Some(w) {
            wrong.fetch_add(1, Ordering::Relaxed);
        }
        ran.fetch_add(1, Ordering::Relaxed);
    };
    let group = p.task_group();
    for w in 0..2 {
        let place = p.worker(w).unwrap().strict();
        for i in 0..50 {
            let (wrong, ran, place2) = (Arc::clone(&wrong), Arc::clone(&ran), place.clone());
            let task = move |g: &TaskGroup| {
                check(w, &wrong, &ran);
                // A placed task spawned by a task, during the wait.
                g.spawn_on(&place2, move |_| check(w, &wrong, &ran));
            };
            if i % 2 == 0 {
                // From outside the pool: started at once, claimed by the
                // wait if no worker took it yet; either way on worker `w`.
                group.spawn_on(&place, task);
            } else {
                // From a worker of the pool: queued for the wait.
                let (g, place) = (&group, &place);
                p.install(move || g.spawn_on(place, task));
            }
        }
    }
    group.wait().unwrap();
    assert_eq!(wrong.load(Ordering::Relaxed), 0);
    assert_eq!(ran.load(Ordering::Relaxed), 200);
}

#[test]
fn a_place_of_another_pool_is_refused_or_run_unplaced() {
    let big = pool(4);
    let small = pool(2);
    let group = small.task_group();
    let place = big.worker(3).unwrap();
    assert!(group.try_spawn_on(&place, |_| {}).is_err());
    let ran = Arc::new(AtomicBool::new(false));
    let r = Arc::clone(&ran);
    group.spawn_on(&place, move |_| r.store(true, Ordering::Release));
    group.wait().unwrap();
    assert!(ran.load(Ordering::Acquire));
}

#[test]
fn a_wait_from_inside_a_task_is_refused_and_the_group_stays_usable() {
    let pool = Arc::new(pool(2));
    let group = Arc::new(pool.task_group());
    let (tx, rx) = mpsc::channel();
    let tx2 = tx.clone();
    group.spawn(move |g| tx.send(g.wait()).unwrap());
    // From a task of an inner group that a task of `group` waits for (on
    // whichever worker it runs: its frame's parent is the waiting task's).
    let (p, outer) = (Arc::clone(&pool), Arc::clone(&group));
    group.spawn(move |_| {
        let inner = p.task_group();
        inner.spawn(move |_| tx2.send(outer.wait()).unwrap());
        inner.wait().unwrap();
    });
    group.wait().unwrap();
    let results: Vec<_> = rx.iter().take(2).collect();
    assert_eq!(results, vec![Err(WouldDeadlock::InsideOwnTask); 2]);
    let ran = Arc::new(AtomicBool::new(false));
    let r = Arc::clone(&ran);
    group.spawn(move |_| r.store(true, Ordering::Release));
    group.wait().unwrap();
    assert!(ran.load(Ordering::Acquire));
}

/// A wait from work that a worker took while the group's own batch waited
/// lower on its stack: `d` waits for `g = {t1, t2}`, so its worker runs
/// t1 while the other worker steals t2 and holds on until `u` is done;
/// `d`'s worker, waiting for t2, takes `u` (spawned from outside the pool
/// into another group), which waits for `g` on top of g's batch.
#[test]
fn a_wait_stacked_on_the_groups_own_batch_is_refused() {
    let pool = pool(2);
    let g = Arc::new(pool.task_group());
    let t2_started = Arc::new(AtomicBool::new(false));
    let u_done = Arc::new(AtomicBool::new(false));
    let z = pool.task_group();
    {
        let (g, t2_started, u_done) =
            (Arc::clone(&g), Arc::clone(&t2_started), Arc::clone(&u_done));
        z.spawn(move |_| {
            let flag = Arc::clone(&t2_started);
            // Spawned from a worker of the pool: queued for d's wait.
            g.spawn(move |_| join_until(&flag));
            let (flag, done) = (Arc::clone(&t2_started), Arc::clone(&u_done));
            g.spawn(move |_| {
                flag.store(true, Ordering::Release);
                spin_until(&done);
            });
            g.wait().unwrap();
        });
    }
    spin_until(&t2_started);
    let (tx, rx) = mpsc::channel();
    let h = pool.task_group();
    {
        let (g, u_done) = (Arc::clone(&g), Arc::clone(&u_done));
        h.spawn(move |_| {
            tx.send(g.wait()).unwrap();
            u_done.store(true, Ordering::Release);
        });
    }
    h.wait().unwrap();
    z.wait().unwrap();
    assert_eq!(rx.recv().unwrap(), Err(WouldDeadlock::StackedOnGroup));
    g.wait().unwrap();
}

#[test]
fn a_tasks_panic_comes_out_of_the_wait_after_the_others_ran() {
    let pool = pool(2);
    let group = pool.task_group();
    let ran = Arc::new(AtomicU64::new(0));
    for i in 0..20 {
        let ran = Arc::clone(&ran);
        group.spawn(move |g| {
            if i == 7 {
                panic!("task {i} failed");
            }
            let ran2 = Arc::clone(&ran);
            g.spawn(move |_| {
                ran2.fetch_add(1, Ordering::Relaxed);
            });
            ran.fetch_add(1, Ordering::Relaxed);
        });
    }
    let err = catch_unwind(AssertUnwindSafe(|| group.wait())).unwrap_err();
    assert_eq!(
        err.downcast_ref::<String>().map(String::as_str),
        Some("task 7 failed")
    );
    assert_eq!(ran.load(Ordering::Relaxed), 38);
    // The group and the pool go on.
    group.spawn(|_| {});
    group.wait().unwrap();
    assert_eq!(pool.install(|| terroir::join(|| 1, || 2)), (1, 2));
}

#[test]
fn panics_of_nested_and_outside_spawned_tasks_come_out_of_the_wait() {
    let pool = pool(2);
    // From outside the pool: started at once as a job of the pool.
    let group = pool.task_group();
    group.spawn(|_| panic!("outside"));
    let err = catch_unwind(AssertUnwindSafe(|| group.wait())).unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"outside"));
    // Spawned by a task while the wait runs.
    group.spawn(|g| g.spawn(|_| panic!("nested")));
    let err = catch_unwind(AssertUnwindSafe(|| group.wait())).unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"nested"));
    group.wait().unwrap();
}

#[test]
fn dropping_a_group_propagates_a_panic_not_waited_for() {
    let pool = pool(2);
    let err = catch_unwind(AssertUnwindSafe(|| {
        let group = pool.task_group();
        group.spawn(|_| panic!("dropped"));
    }))
    .unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"dropped"));
    assert_eq!(pool.install(|| 6 * 7), 42);
}

/// Spawns and waits racing from many threads (outside the pool and on
/// its workers) on shared groups: exact counts, no hang.
#[test]
fn spawns_and_waits_racing_from_many_threads_keep_their_counts() {
    let pool = Arc::new(pool(2));
    for round in 0..20 {
        let group = Arc::new(pool.task_group());
        let count = Arc::new(AtomicU64::new(0));
        let expected = Arc::new(AtomicU64::new(0));
        let threads = 6;
        let barrier = Arc::new(Barrier::new(threads + 1));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (group, count, expected, barrier, pool) = (
                    Arc::clone(&group),
                    Arc::clone(&count),
                    Arc::clone(&expected),
                    Arc::clone(&barrier),
                    Arc::clone(&pool),
                );
                thread::spawn(move || {
                    barrier.wait();
                    for i in 0..40u32 {
                        let depth = (i + t as u32) % 4;
                        expected.fetch_add((1 << (depth + 1)) - 1, Ordering::Relaxed);
                        let c = Arc::clone(&count);
                        if i % 3 == 0 {
                            // From a worker of the pool (queued), then a
                            // wait on that worker. That worker may have
                            // taken this `install` while it waited inside
                            // the group's own batch (another thread's
                            // wait): stacked on the group, such a wait
                            // could never end and is refused.
                            let g = Arc::clone(&group);
                            pool.install(move || {
                                g.spawn(move |g| grow(depth, c, g));
                                if i % 6 == 0 {
                                    match g.wait() {
                                        Ok(()) | Err(WouldDeadlock::StackedOnGroup) => {}
                                        Err(e) => panic!("wait refused: {e:?}"),
                                    }
                                }
                            });
                        } else {
                            group.spawn(move |g| grow(depth, c, g));
                        }
                        if i % 5 == 0 {
                            group.wait().unwrap();
                        }
                    }
                })
            })
            .collect();
        barrier.wait();
        for h in handles {
            h.join().unwrap();
        }
        group.wait().unwrap();
        assert_eq!(
            count.load(Ordering::Relaxed),
            expected.load(Ordering::Relaxed),
            "round {round}"
        );
    }
}

/// Many short-lived groups created, spawned into and dropped on workers
/// while other threads do the same: the pattern of a task tree with a
/// group per task.
#[test]
fn a_group_per_task_in_a_tree() {
    fn tree(depth: u32, pool: &Arc<ThreadPool>) -> u64 {
        if depth == 0 {
            return 1;
        }
        let sum = Arc::new(AtomicU64::new(0));
        {
            let group = pool.task_group();
            for _ in 0..2 {
                let (sum, pool2) = (Arc::clone(&sum), Arc::clone(pool));
                group.spawn(move |_| {
                    sum.fetch_add(tree(depth - 1, &pool2), Ordering::Relaxed);
                });
            }
        }
        sum.load(Ordering::Relaxed) + 1
    }
    let pool = Arc::new(pool(2));
    let p = Arc::clone(&pool);
    assert_eq!(pool.install(move || tree(10, &p)), (1 << 11) - 1);
}

/// A wait from a task of a batch that another worker runs on top of a
/// batch of the waited-for group (see [`stacked_elsewhere_scenario`]) is
/// refused.
#[test]
fn a_wait_from_a_batch_stacked_on_the_groups_batch_elsewhere_is_refused() {
    let refused = stacked_elsewhere_scenario(Duration::from_secs(60), |_, g, tx| {
        tx.send(g.wait()).unwrap()
    });
    assert_eq!(
        refused,
        Some(Err(WouldDeadlock::StackedOnGroup)),
        "the wait was not refused (it would never end)"
    );
}

/// A pool whose placed tasks run on their worker only, for the scenarios
/// that need work on given workers.
/// (Stacks of 16 MiB: room for deep nesting in a debug build.)
fn strict_pool(threads: usize) -> Arc<ThreadPool> {
    Arc::new(
        ThreadPoolBuilder::new()
            .num_threads(threads)
            .pin(false)
            .stack_size(16 << 20)
            .policy(Policy::StrictLocality)
            .build()
            .unwrap(),
    )
}

/// A task of a batch that another worker runs on top of a batch of the
/// group `g`: worker 0, waiting inside g's batch (for t2 on worker 1),
/// takes the batch of h that the main thread's wait injects; h's task
/// `waiter(pool, g, tx)` runs on worker 2, where a wait for g could never end
/// (g cannot become idle before worker 0 returns from h's batch, which
/// waits for `waiter`), and on no thread that holds g's work itself.
/// Returns what `waiter` sent on `tx`, or `None` when it sent nothing
/// within `patience` (then the groups are leaked: their drops would wait
/// for work that never ends).
fn stacked_elsewhere_scenario<T: Send + 'static>(
    patience: Duration,
    waiter: impl FnOnce(&Arc<ThreadPool>, &Arc<TaskGroup>, &mpsc::Sender<T>) + Send + 'static,
) -> Option<T> {
    let pool = strict_pool(3);
    let g = Arc::new(pool.task_group());
    let h = Arc::new(pool.task_group());
    let z = pool.task_group();
    let c_started = Arc::new(AtomicBool::new(false));
    let t2_started = Arc::new(AtomicBool::new(false));
    let h_started = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    {
        let (c_started, h_started) = (Arc::clone(&c_started), Arc::clone(&h_started));
        z.spawn_on(&pool.worker(2).unwrap(), move |_| {
            c_started.store(true, Ordering::Release);
            spin_until(&h_started);
        });
    }
    spin_until(&c_started);
    {
        let (p, g, h) = (Arc::clone(&pool), Arc::clone(&g), Arc::clone(&h));
        let (t2_started, h_started) = (Arc::clone(&t2_started), Arc::clone(&h_started));
        z.spawn_on(&pool.worker(0).unwrap(), move |_| {
            let flag = Arc::clone(&h_started);
            h.spawn(move |_| flag.store(true, Ordering::Release));
            let g2 = Arc::clone(&g);
            let p2 = Arc::clone(&p);
            h.spawn_on(&p.worker(2).unwrap(), move |_| waiter(&p2, &g2, &tx));
            g.spawn(|_| {});
            let (started, release) = (Arc::clone(&t2_started), Arc::clone(&h_started));
            g.spawn_on(&p.worker(1).unwrap(), move |_| {
                started.store(true, Ordering::Release);
                spin_until(&release);
            });
            g.wait().unwrap();
        });
    }
    spin_until(&t2_started);
    let waited = {
        let h = Arc::clone(&h);
        thread::spawn(move || h.wait())
    };
    let Ok(got) = rx.recv_timeout(patience) else {
        std::mem::forget((z, g, h, waited, pool));
        return None;
    };
    waited.join().unwrap().unwrap();
    z.wait().unwrap();
    g.wait().unwrap();
    Some(got)
}

/// A wait refused for a cycle through another worker's stack changes
/// nothing: it does not first run the group's queued tasks (here from a
/// position where they could never finish: `q` ends only once the wait
/// has returned).
#[test]
fn a_wait_refused_for_another_workers_stack_runs_none_of_the_groups_tasks() {
    let got = stacked_elsewhere_scenario(Duration::from_secs(20), |_, g, tx| {
        let returned = Arc::new(AtomicBool::new(false));
        let ran_on = Arc::new(AtomicUsize::new(usize::MAX));
        {
            let (returned, ran_on) = (Arc::clone(&returned), Arc::clone(&ran_on));
            // Spawned by a worker, from a task of another group: queued.
            g.spawn(move |_| {
                ran_on.store(terroir::current_thread_index().unwrap(), Ordering::Release);
                spin_until(&returned);
            });
        }
        let refused = g.wait();
        returned.store(true, Ordering::Release);
        tx.send((refused, ran_on.load(Ordering::Acquire))).unwrap();
    });
    let Some((refused, ran_on)) = got else {
        panic!("the refused wait ran the group's queued task, which never ends");
    };
    assert_eq!(refused, Err(WouldDeadlock::StackedOnGroup));
    assert_eq!(ran_on, usize::MAX, "the refused wait ran a queued task");
}

/// Runs `f` in a task nested `depth` groups deep on the calling worker
/// (each level's group has one task, run by its wait on this worker).
fn nested_then(depth: u32, pool: &Arc<ThreadPool>, f: Box<dyn FnOnce() + Send>) {
    if depth == 0 {
        return f();
    }
    let group = pool.task_group();
    let p = Arc::clone(pool);
    group.spawn(move |_| nested_then(depth - 1, &p, f));
    group.wait().unwrap();
}

/// The check of a wait follows every frame and entry it can reach, however
/// deep the nesting: here the wait that could never end comes from a task
/// nested 100 groups deep in the stacked-elsewhere scenario (200 entries
/// and 100 batches on this worker before the one that leads to g's batch).
#[test]
fn a_deeply_nested_wait_stacked_on_the_groups_batch_elsewhere_is_refused() {
    let refused = stacked_elsewhere_scenario(Duration::from_secs(20), |pool, g, tx| {
        let (g, tx) = (Arc::clone(g), tx.clone());
        nested_then(100, pool, Box::new(move || tx.send(g.wait()).unwrap()));
    });
    assert_eq!(
        refused,
        Some(Err(WouldDeadlock::StackedOnGroup)),
        "the wait was not refused (it would never end)"
    );
}

/// A wait from work that a worker took while it held a stolen part of the
/// group's batch (a fragment of the join tree that runs the batch's plain
/// tasks, with none of the group's tasks running on it at the time):
/// `d` (worker 0) waits for `g = {t0, t1, t2, t3}`; a thief takes the
/// half t2, t3, runs t2, and waits in that join for t3, which another
/// worker stole and which holds on until `x` is done. `x`, placed on the
/// thief, waits for g, which cannot become idle before the thief's join
/// returns, which waits for `x`.
#[test]
fn a_wait_stacked_on_a_stolen_part_of_the_groups_join_tree_is_refused() {
    let pool = strict_pool(3);
    let g = Arc::new(pool.task_group());
    let z = pool.task_group();
    let h = pool.task_group();
    let flag = || Arc::new(AtomicBool::new(false));
    let (z_started, go2, t3_started, release) = (flag(), flag(), flag(), flag());
    let t2_on = Arc::new(AtomicUsize::new(usize::MAX));
    // Worker 2 busy until t2 has started, so that worker 1 steals the
    // half t2, t3 of the join tree.
    {
        let (zs, go2) = (Arc::clone(&z_started), Arc::clone(&go2));
        z.spawn_on(&pool.worker(2).unwrap(), move |_| {
            zs.store(true, Ordering::Release);
            spin_until(&go2);
        });
    }
    spin_until(&z_started);
    {
        let g = Arc::clone(&g);
        let (go2, t3s, rel, t2_on) = (
            Arc::clone(&go2),
            Arc::clone(&t3_started),
            Arc::clone(&release),
            Arc::clone(&t2_on),
        );
        z.spawn_on(&pool.worker(0).unwrap(), move |_| {
            let t = Arc::clone(&t3s);
            g.spawn(move |_| join_until(&t)); // t0
            g.spawn(|_| {}); // t1
            let (t, go) = (Arc::clone(&t3s), Arc::clone(&go2));
            g.spawn(move |_| {
                // t2, on the thief of the half t2, t3
                t2_on.store(terroir::current_thread_index().unwrap(), Ordering::Release);
                go.store(true, Ordering::Release);
                join_until(&t);
            });
            let (t, r) = (Arc::clone(&t3s), Arc::clone(&rel));
            g.spawn(move |_| {
                // t3, stolen from the thief
                t.store(true, Ordering::Release);
                spin_until(&r);
            });
            g.wait().unwrap();
        });
    }
    spin_until(&t3_started);
    let thief = t2_on.load(Ordering::Acquire);
    let (tx, rx) = mpsc::channel();
    {
        let g = Arc::clone(&g);
        h.spawn_on(&pool.worker(thief).unwrap(), move |_| {
            tx.send(g.wait()).unwrap()
        });
    }
    let refused = rx.recv_timeout(Duration::from_secs(20));
    release.store(true, Ordering::Release);
    if refused.is_err() {
        // Stuck for good: leave the groups (whose drops would wait).
        std::mem::forget((g, h, z, pool));
        panic!("the wait was not refused (it would never end)");
    }
    assert_eq!(refused, Ok(Err(WouldDeadlock::StackedOnGroup)));
    h.wait().unwrap();
    z.wait().unwrap();
    g.wait().unwrap();
}
