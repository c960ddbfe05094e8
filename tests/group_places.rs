//! Placed tasks of a task group spawned from a thread outside the pool:
//! each starts at once as a job at its place, which the group's wait may
//! claim first (and then runs at its place itself). Whichever runs it, the
//! task counts once in the statistics. (That a temporal key then names
//! the worker that ran the task, not the one whose job found it taken, is
//! checked from C: capi/tests/c/places.c.)

use terroir::{TaskGroup, ThreadPool, ThreadPoolBuilder};

fn pool() -> ThreadPool {
    ThreadPoolBuilder::new()
        .num_threads(2)
        .pin(false)
        .build()
        .unwrap()
}

fn placed(pool: &ThreadPool) -> u64 {
    pool.stats().nodes.iter().map(|n| n.placed).sum()
}

#[test]
fn placed_tasks_from_outside_count_once() {
    let pool = pool();
    let place = pool.node(0).unwrap();
    // One task per wait: the wait's claim races the task's own job.
    let rounds = 2000;
    pool.reset_stats();
    let group = TaskGroup::new(&pool);
    for _ in 0..rounds {
        group.spawn_on(&place, |_| {});
        group.wait().unwrap();
    }
    assert_eq!(placed(&pool), rounds);
}
