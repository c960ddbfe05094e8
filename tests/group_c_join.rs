//! Waits for a task group from the branches of C joins (`terroir_join`,
//! whose Rust side is `terroir::__capi::Worker::join`): a branch that
//! another worker steals carries what waits for it (the joining work's
//! frame and what the joining thread holds below the join), so that a
//! wait from it that could never end is refused with `WouldDeadlock`
//! instead of hanging, however many times the branch's work was stolen on.

mod common;
use common::{join_until, spin_until};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use terroir::__capi::Worker;
use terroir::{Policy, ThreadPool, ThreadPoolBuilder, WouldDeadlock};

/// A pool whose placed tasks run on their worker only, for the scenarios
/// that need work on given workers (stacks of 16 MiB: room for a debug
/// build).
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

/// A wait from a stolen branch of a C join (which carries its task's
/// frame) of a task that runs, on another worker, on top of a task of the
/// waited-for group, with no batch in between: `tg` (of g, on worker 0)
/// waits for k, whose task spins on worker 1, so worker 0 takes `th` (of
/// h); th's C join has its branch `b2` stolen by worker 2, and b2 waits
/// for g, which cannot become idle before worker 0 returns from th.
#[test]
fn a_wait_from_a_c_join_branch_stacked_on_the_groups_task_elsewhere_is_refused() {
    let pool = strict_pool(3);
    let g = Arc::new(pool.task_group());
    let h = pool.task_group();
    let flag = || Arc::new(AtomicBool::new(false));
    let (k_started, release, b2_started) = (flag(), flag(), flag());
    {
        let (p, ks, rel) = (
            Arc::clone(&pool),
            Arc::clone(&k_started),
            Arc::clone(&release),
        );
        g.spawn_on(&pool.worker(0).unwrap(), move |_| {
            let k = p.task_group();
            k.spawn_on(&p.worker(1).unwrap(), move |_| {
                ks.store(true, Ordering::Release);
                spin_until(&rel);
            });
            k.wait().unwrap();
        });
    }
    spin_until(&k_started);
    let (tx, rx) = mpsc::channel();
    {
        let (g, b2_started) = (Arc::clone(&g), Arc::clone(&b2_started));
        h.spawn_on(&pool.worker(0).unwrap(), move |_| {
            let (g, b2_started, tx) = (&g, &b2_started, &tx);
            Worker::current(None).unwrap().join(
                move || join_until(b2_started),
                move || {
                    b2_started.store(true, Ordering::Release);
                    tx.send(g.wait()).unwrap();
                },
            );
        });
    }
    let refused = rx.recv_timeout(Duration::from_secs(20));
    release.store(true, Ordering::Release);
    if refused.is_err() {
        // Stuck for good: leave the groups (whose drops would wait).
        std::mem::forget((g, h, pool));
        panic!("the wait was not refused (it would never end)");
    }
    assert_eq!(refused, Ok(Err(WouldDeadlock::StackedOnGroup)));
    h.wait().unwrap();
    g.wait().unwrap();
}

/// A wait from a branch of a C join that was stolen twice: the branch `b`
/// of a C join on worker 0 is stolen by worker 1 (the middle thief) while
/// it waits, in g's batch, for g's task on worker 2; `b` makes a C join of
/// its own whose branch `b2` a third thread takes (worker 0 or 2, whichever
/// is idle first: neither holds anything of g) and waits for g. That wait
/// could never end: g's batch on worker 1 cannot end before worker 1
/// returns from `b`, which waits for `b2`. Only the middle thief's stack
/// leads to g; a branch that carried its owner's frame on, and not what
/// the middle thief holds below it, let the wait through (a hang).
#[test]
fn a_wait_from_a_twice_stolen_c_join_branch_stacked_on_the_groups_batch_is_refused() {
    let pool = strict_pool(3);
    let g = Arc::new(pool.task_group());
    let z = pool.task_group();
    let h = pool.task_group();
    let flag = || Arc::new(AtomicBool::new(false));
    let (t_started, b_started, b2_started) = (flag(), flag(), flag());
    let b_on = Arc::new(AtomicUsize::new(usize::MAX));
    // Worker 1 waits for g, whose task spins on worker 2 until `b` has
    // started: worker 1 is then the only idle worker, and steals `b`.
    {
        let (p, g, ts, bs) = (
            Arc::clone(&pool),
            Arc::clone(&g),
            Arc::clone(&t_started),
            Arc::clone(&b_started),
        );
        z.spawn_on(&pool.worker(1).unwrap(), move |_| {
            g.spawn(|_| {});
            g.spawn_on(&p.worker(2).unwrap(), move |_| {
                ts.store(true, Ordering::Release);
                spin_until(&bs);
            });
            g.wait().unwrap();
        });
    }
    spin_until(&t_started);
    let (tx, rx) = mpsc::channel();
    {
        let (g, bs, b2s, b_on) = (
            Arc::clone(&g),
            Arc::clone(&b_started),
            Arc::clone(&b2_started),
            Arc::clone(&b_on),
        );
        h.spawn_on(&pool.worker(0).unwrap(), move |_| {
            let (g, bs, b2s, b_on, tx) = (&g, &bs, &b2s, &b_on, &tx);
            Worker::current(None).unwrap().join(
                move || join_until(bs),
                move || {
                    // `b`, on the middle thief.
                    b_on.store(terroir::current_thread_index().unwrap(), Ordering::Release);
                    bs.store(true, Ordering::Release);
                    Worker::current(None).unwrap().join(
                        move || join_until(b2s),
                        move || {
                            // `b2`, stolen from the middle thief.
                            b2s.store(true, Ordering::Release);
                            tx.send((terroir::current_thread_index(), g.wait()))
                                .unwrap();
                        },
                    );
                },
            );
        });
    }
    let got = rx.recv_timeout(Duration::from_secs(20));
    let Ok((b2_on, refused)) = got else {
        // Stuck for good: leave the groups (whose drops would wait).
        std::mem::forget((g, h, z, pool));
        panic!("the wait was not refused (it would never end)");
    };
    assert_eq!(b_on.load(Ordering::Acquire), 1, "b ran on the wrong worker");
    assert_ne!(b2_on, Some(1), "b2 was not stolen from the middle thief");
    assert_eq!(refused, Err(WouldDeadlock::StackedOnGroup));
    h.wait().unwrap();
    z.wait().unwrap();
    g.wait().unwrap();
}

/// A wait from work that a stolen branch of a C join runs in another pool
/// (`terroir_parallel_for` or `terroir_join` given another pool's handle
/// enter it carrying the caller's frame): the branch `b` of a C join on
/// worker 0 is stolen by worker 1 while it waits, in g's batch, for g's
/// task on worker 2; `b` enters a second pool, whose worker waits for g.
/// That wait could never end (worker 1 cannot return from `b`, and so
/// from g's batch, before the second pool's work is done), and only what
/// worker 1 holds below the branch leads to g.
#[test]
fn a_wait_in_another_pool_entered_from_a_stolen_c_join_branch_is_refused() {
    use terroir::__capi::install_carrying_frame;
    let pool = strict_pool(3);
    let other = strict_pool(1);
    let g = Arc::new(pool.task_group());
    let z = pool.task_group();
    let h = pool.task_group();
    let flag = || Arc::new(AtomicBool::new(false));
    let (t_started, b_started) = (flag(), flag());
    let b_on = Arc::new(AtomicUsize::new(usize::MAX));
    {
        let (p, g, ts, bs) = (
            Arc::clone(&pool),
            Arc::clone(&g),
            Arc::clone(&t_started),
            Arc::clone(&b_started),
        );
        z.spawn_on(&pool.worker(1).unwrap(), move |_| {
            g.spawn(|_| {});
            g.spawn_on(&p.worker(2).unwrap(), move |_| {
                ts.store(true, Ordering::Release);
                spin_until(&bs);
            });
            g.wait().unwrap();
        });
    }
    spin_until(&t_started);
    let (tx, rx) = mpsc::channel();
    {
        let (g, bs, b_on, other) = (
            Arc::clone(&g),
            Arc::clone(&b_started),
            Arc::clone(&b_on),
            Arc::clone(&other),
        );
        h.spawn_on(&pool.worker(0).unwrap(), move |_| {
            let (g, bs, b_on, tx, other) = (&g, &bs, &b_on, &tx, &other);
            Worker::current(None).unwrap().join(
                move || join_until(bs),
                move || {
                    // `b`, on the thief.
                    b_on.store(terroir::current_thread_index().unwrap(), Ordering::Release);
                    bs.store(true, Ordering::Release);
                    install_carrying_frame(other, move || tx.send(g.wait()).unwrap());
                },
            );
        });
    }
    let got = rx.recv_timeout(Duration::from_secs(20));
    let Ok(refused) = got else {
        // Stuck for good: leave the groups (whose drops would wait).
        std::mem::forget((g, h, z, pool, other));
        panic!("the wait was not refused (it would never end)");
    };
    assert_eq!(b_on.load(Ordering::Acquire), 1, "b ran on the wrong worker");
    assert_eq!(refused, Err(WouldDeadlock::StackedOnGroup));
    h.wait().unwrap();
    z.wait().unwrap();
    g.wait().unwrap();
}

/// A worker T inside a stolen C branch `b0` (waiting for `b0`'s own
/// join's branch `b1`, which a third worker took) steals branch `b` of a
/// C join made in group h's task; `b` waits for g. `b0`'s join is in g's
/// task t, so g cannot become idle before T returns from `b0`, hence from
/// `b`: the wait could never end. Found by review: `b`'s frames led to
/// the thread that made `b`'s join and to T's list, but `b0`'s frames
/// were on no list of T (a stolen branch put no node there), so the walk
/// never reached t. Before the fix this test's wait was let through and
/// hung (not refused within 20 s, twice); every stolen branch is now
/// listed on its thief.
#[test]
fn a_wait_from_a_branch_stolen_by_a_worker_inside_another_stolen_branch_is_refused() {
    let pool = strict_pool(4);
    let g = Arc::new(pool.task_group());
    let h = pool.task_group();
    let f = || Arc::new(AtomicBool::new(false));
    let (h_started, release, b1_started, t_ready, b_started) = (f(), f(), f(), f(), f());
    let (tx, rx) = mpsc::channel();
    let on: Arc<[AtomicUsize; 3]> = Arc::new(std::array::from_fn(|_| AtomicUsize::new(99)));
    let idx = || terroir::current_thread_index().unwrap();
    // Worker 2 (P): busy until T waits inside b0, then offers `b`.
    {
        let (hs, tr, bs, g, on2) = (
            h_started.clone(),
            t_ready.clone(),
            b_started.clone(),
            g.clone(),
            on.clone(),
        );
        h.spawn_on(&pool.worker(2).unwrap(), move |_| {
            hs.store(true, Ordering::Release);
            spin_until(&tr);
            let (bs, g, tx, on2) = (&bs, &g, &tx, &on2);
            Worker::current(None).unwrap().join(
                move || join_until(bs),
                move || {
                    on2[2].store(idx(), Ordering::Release);
                    bs.store(true, Ordering::Release);
                    tx.send((terroir::current_thread_index(), g.wait()))
                        .unwrap();
                },
            );
        });
    }
    spin_until(&h_started);
    // Worker 0: g's task t, whose C join's branch b0 is stolen (by 1 or 3).
    {
        let (rel, b1s, tr, on1) = (
            release.clone(),
            b1_started.clone(),
            t_ready.clone(),
            on.clone(),
        );
        g.spawn_on(&pool.worker(0).unwrap(), move |_| {
            let (rel, b1s, tr, on1) = (&rel, &b1s, &tr, &on1);
            Worker::current(None).unwrap().join(
                move || join_until(rel),
                move || {
                    on1[0].store(idx(), Ordering::Release);
                    // b0 on T: its own C join, whose branch b1 the other
                    // idle worker steals; T then waits for b1 (no node).
                    Worker::current(None).unwrap().join(
                        move || {
                            join_until(b1s);
                            tr.store(true, Ordering::Release);
                        },
                        move || {
                            on1[1].store(idx(), Ordering::Release);
                            b1s.store(true, Ordering::Release);
                            spin_until(rel);
                        },
                    );
                },
            );
        });
    }
    let got = rx.recv_timeout(Duration::from_secs(20));
    let Ok((b_on, refused)) = got else {
        eprintln!(
            "b0 on {}, b1 on {}, b on {}; b1_started {} t_ready {} b_started {}",
            on[0].load(Ordering::Acquire),
            on[1].load(Ordering::Acquire),
            on[2].load(Ordering::Acquire),
            b1_started.load(Ordering::Acquire),
            t_ready.load(Ordering::Acquire),
            b_started.load(Ordering::Acquire)
        );
        std::mem::forget((g, h, pool));
        panic!("the wait was not refused (it would never end)");
    };
    release.store(true, Ordering::Release);
    eprintln!("b ran on {b_on:?}: {refused:?}");
    assert_eq!(refused, Err(WouldDeadlock::StackedOnGroup));
    h.wait().unwrap();
    g.wait().unwrap();
}
