use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::super::core::{word, CoreError, GroupCore, LIVE, OWNED};
use super::{Closed, WarmKey, WARM_GROUPS};
use crate::sched::test_pool as pool;
use crate::sched::worker::WorkerThread;

/// A leaked group (as the C table's slots are) opened by the calling
/// worker with `key`, draining into `drain`.
fn open_warm_keyed(key: u32, drain: fn(u32)) -> (&'static GroupCore, u32) {
    let core: &'static GroupCore = Box::leak(Box::new(GroupCore::new()));
    // SAFETY: a new group, opened by this thread alone, never freed.
    let epoch = unsafe { core.open_here(None, Some(WarmKey { key, drain })) }
        .expect("a worker opens a group here");
    (core, epoch)
}

fn no_drain(_: u32) {}

/// [`crate::sched::alone`], for this module's tests: the fast paths of the
/// warm groups need the worker's entry in the thread-pointer table
/// (`current.rs`), which other tests' workers could crowd out.
fn alone(name: &str, body: impl FnOnce()) {
    crate::sched::alone(module_path!(), name, body);
}

/// [`GroupCore::open_warm`], its token as `(key, epoch)`.
fn open_warm(tag: Option<usize>) -> Option<(u32, u32)> {
    GroupCore::open_warm(tag).map(|t| ((t as u32) - 1, (t >> 32) as u32))
}

/// Groups are kept warm only where they open owned (`bias.rs`): on
/// every Linux this runs on (`membarrier`), so a machine without it
/// fails here rather than passing without a check.
fn assert_bias() {
    assert!(
        super::super::bias::enabled(),
        "membarrier registration (needed for owned, and so warm, groups)"
    );
}

fn kept() -> usize {
    WorkerThread::current().expect("a worker").warm_groups.len()
}

/// The calling worker's count of the groups it opened for its own
/// pool and has not closed (what its exit sums up: `pool_ref.rs`).
fn open_count() -> usize {
    WorkerThread::current().expect("a worker").groups_open.get()
}

#[test]
fn a_closed_group_is_opened_again_by_its_worker_under_the_next_epoch() {
    alone(
        "a_closed_group_is_opened_again_by_its_worker_under_the_next_epoch",
        || {
            assert_bias();
            pool(1).install(|| {
                let open = open_count();
                let (core, e) = open_warm_keyed(7, no_drain);
                assert_eq!(open_count(), open + 1);
                assert_eq!(core.close_idle_owned(e), Some(Closed::Warm));
                assert_eq!(kept(), 1);
                assert_eq!(open_count(), open, "a kept group is not open");
                // Another pool's tag: not this worker's group to open.
                assert_eq!(open_warm(Some(usize::MAX)), None);
                assert_eq!(open_warm(None), Some((7, e + 1)));
                assert_eq!(kept(), 0);
                assert_eq!(open_count(), open + 1, "the warm open counts");
                assert_eq!(
                    core.state.load(Ordering::Relaxed),
                    word(e + 1, LIVE | OWNED),
                    "open, owned, idle"
                );
                // The old epoch is dead, on the fast path and the general one.
                assert_eq!(core.close_idle_owned(e), None);
                assert!(matches!(core.close(e), Err(CoreError::Dead)));
                assert!(core.spawn_here(e, |_| ()).is_err());
                // The reopened group works: a task, a wait, a close (kept again).
                let ran = std::sync::Arc::new(AtomicUsize::new(0));
                let r = std::sync::Arc::clone(&ran);
                assert!(core
                    .spawn_here(e + 1, move |_| {
                        r.fetch_add(1, Ordering::Relaxed);
                    })
                    .is_ok());
                assert_eq!(core.close(e + 1).ok(), Some(Closed::Warm));
                assert_eq!(ran.load(Ordering::Relaxed), 1);
                assert_eq!(open_warm(None), Some((7, e + 2)));
                assert_eq!(core.close_idle_owned(e + 2), Some(Closed::Warm));
                assert_eq!(open_warm(None), Some((7, e + 3)));
                assert_eq!(core.close_idle_owned(e + 3), Some(Closed::Warm));
                // Nothing else is kept: a second open finds none.
                assert_eq!(open_warm(None), Some((7, e + 4)));
                assert_eq!(open_warm(None), None);
                assert_eq!(core.close_idle_owned(e + 4), Some(Closed::Warm));
                assert_eq!(open_warm(None), Some((7, e + 5)));
                assert_eq!(core.close(e + 5).ok(), Some(Closed::Warm));
                assert_eq!(open_count(), open, "every open closed");
            });
        },
    );
}

#[test]
fn groups_without_a_key_or_past_the_list_are_freed() {
    alone("groups_without_a_key_or_past_the_list_are_freed", || {
        assert_bias();
        pool(1).install(|| {
            let core: &'static GroupCore = Box::leak(Box::new(GroupCore::new()));
            // SAFETY: a new group, opened by this thread alone.
            let e = unsafe { core.open_here(None, None) }.expect("opens");
            assert_eq!(core.close_idle_owned(e), Some(Closed::Free));
            // Nested: the last opened is the hot group; the others go to
            // the stack when closed, as far as it holds.
            let n = WARM_GROUPS + 3;
            let open: Vec<_> = (0..n as u32)
                .map(|k| open_warm_keyed(k, no_drain))
                .collect();
            let closed: Vec<_> = open
                .iter()
                .map(|&(core, e)| core.close_idle_owned(e))
                .collect();
            let warm = |i: usize| i < WARM_GROUPS || i == n - 1;
            for (i, c) in closed.iter().enumerate() {
                let expected = if warm(i) { Closed::Warm } else { Closed::Free };
                assert_eq!(*c, Some(expected), "group {i}");
                // The ones freed gave up their ownership (`owned_by`), for
                // another worker to own them; the kept ones did not.
                let owned_by = open[i].0.owned_by.load(Ordering::Relaxed);
                assert_eq!(owned_by != 0, warm(i), "group {i}'s owner");
            }
            // The hot one first, then the stack's latest first.
            let reopened: Vec<_> = std::iter::from_fn(|| open_warm(None)).collect();
            let keys: Vec<_> = reopened.iter().map(|&(k, _)| k).collect();
            let expected: Vec<u32> = std::iter::once(n as u32 - 1)
                .chain((0..WARM_GROUPS as u32).rev())
                .collect();
            assert_eq!(keys, expected);
            for (k, e) in reopened {
                let core = open[k as usize].0;
                assert_eq!(core.close_idle_owned(e), Some(Closed::Warm));
            }
        });
    });
}

/// An adopted group counts a reference to its pool, which a warm open
/// would not take again: its close frees it. A group another thread
/// only locked (revoking the bias) is kept, and opens owned again.
#[test]
fn an_adopted_group_is_freed_and_a_revoked_one_kept() {
    alone("an_adopted_group_is_freed_and_a_revoked_one_kept", || {
        assert_bias();
        let pool = pool(1);
        let (core, e) = pool.install(|| open_warm_keyed(1, no_drain));
        // Outside the pool: a spawn adopts.
        std::thread::spawn(move || core.spawn(e, None, false, |_| ()).expect("spawn"))
            .join()
            .unwrap();
        pool.install(move || {
            assert_eq!(core.close(e).ok(), Some(Closed::Free));
            assert_eq!(open_warm(None), None);
        });
        let (core, e) = pool.install(|| open_warm_keyed(2, no_drain));
        std::thread::spawn(move || core.with_pool(e, |_| ()).expect("open"))
            .join()
            .unwrap();
        assert!(core.bias.is_revoked(e), "revoked");
        assert_eq!(core.state.load(Ordering::Relaxed) & OWNED, 0);
        pool.install(move || {
            assert_eq!(core.close(e).ok(), Some(Closed::Warm));
            assert_eq!(open_warm(None), Some((2, e + 1)));
            assert!(!core.bias.is_revoked(e + 1), "the next epoch's bias holds");
            assert_eq!(
                core.state.load(Ordering::Relaxed),
                word(e + 1, LIVE | OWNED)
            );
            assert_eq!(core.close_idle_owned(e + 1), Some(Closed::Warm));
        });
    });
}

/// A group another thread closed (revoking its bias) may still see its
/// owner come late to it (`bias.rs`, "Stale threads"): another worker
/// opens it, but not owned, and so neither keeps it warm nor clears
/// the ownership when it closes it; its last owner owns it again, and
/// once that owner closed it itself (and freed it), anyone may.
#[test]
fn a_group_closed_by_another_thread_is_owned_again_only_by_its_last_owner() {
    alone(
        "a_group_closed_by_another_thread_is_owned_again_only_by_its_last_owner",
        || {
            use std::sync::atomic::AtomicU32;
            assert_bias();
            let pool = pool(2);
            let (core, e) = pool.install(|| open_warm_keyed(4, no_drain));
            let owner = core.owned_by.load(Ordering::Relaxed);
            assert_ne!(owner, 0);
            std::thread::spawn(move || assert_eq!(core.close(e).ok(), Some(Closed::Free)))
                .join()
                .unwrap();
            assert_eq!(core.owned_by.load(Ordering::Relaxed), owner, "kept");
            // One step at a time, on the worker the step names: opened (with a
            // key, or none, so that the close frees it), then closed.
            let step = AtomicU32::new(0);
            let run = |n: u32, key: Option<u32>| {
                while step.load(Ordering::Acquire) != n {
                    std::thread::yield_now();
                }
                assert_eq!(core.epoch(), None, "closed");
                let warm = key.map(|key| WarmKey {
                    key,
                    drain: no_drain,
                });
                // SAFETY: a closed group in no warm list (every step before
                // freed it), opened by this thread alone (the other worker
                // waits for its step), never freed.
                let e = unsafe { core.open_here(None, warm) }.expect("opens");
                let owned = core.state.load(Ordering::Relaxed) & OWNED != 0;
                let closed = core.close(e).ok();
                let owned_by = core.owned_by.load(Ordering::Relaxed);
                step.store(n + 1, Ordering::Release);
                (n, owned, closed, owned_by)
            };
            let mut steps: Vec<_> = pool
                .broadcast(|_| {
                    let me = WorkerThread::current().unwrap().info as usize;
                    if me == owner {
                        vec![run(1, None)]
                    } else {
                        vec![run(0, Some(4)), run(2, Some(4))]
                    }
                })
                .concat();
            steps.sort_unstable_by_key(|s| s.0);
            assert_eq!(
                steps,
                [
                    // Another worker: not owned, freed, the ownership kept.
                    (0, false, Some(Closed::Free), owner),
                    // Its last owner: owned; its own close gives it up.
                    (1, true, Some(Closed::Free), 0),
                    // Then anyone owns it, and keeps it warm.
                    (2, true, Some(Closed::Warm), steps[2].3),
                ]
            );
            assert_ne!(steps[2].3, 0);
            assert_ne!(steps[2].3, owner);
        },
    );
}

#[test]
fn a_group_whose_epoch_would_wrap_is_retired_not_kept() {
    alone("a_group_whose_epoch_would_wrap_is_retired_not_kept", || {
        assert_bias();
        pool(1).install(|| {
            let core: &'static GroupCore = Box::leak(Box::new(GroupCore::new()));
            core.state.store(word(u32::MAX, 0), Ordering::Relaxed);
            // SAFETY: a closed group, opened by this thread alone, never freed.
            let e = unsafe {
                core.open_here(
                    None,
                    Some(WarmKey {
                        key: 3,
                        drain: no_drain,
                    }),
                )
            }
            .expect("opens");
            assert_eq!(e, u32::MAX);
            assert_eq!(core.close_idle_owned(e), Some(Closed::Retired));
            assert_eq!(open_warm(None), None);
            // SAFETY: as above.
            assert_eq!(unsafe { core.open_here(None, None) }, None, "retired");
        });
    });
}

/// The hot group: closed through its token without the caller's
/// lookup, kept, opened again first; a stale token of it is dead; the
/// group opened last is the hot one, and one it replaced is closed
/// through the lookup and stacked; once another thread closed the hot
/// group, the worker neither opens it again nor gives it back, and the
/// next group it opens becomes the hot one.
#[test]
fn the_hot_group_is_closed_by_its_token_and_let_go_when_another_thread_closes_it() {
    alone(
        "the_hot_group_is_closed_by_its_token_and_let_go_when_another_thread_closes_it",
        || {
            assert_bias();
            let no_lookup =
                || -> Option<&'static GroupCore> { panic!("the hot group needs no lookup") };
            let pool = pool(1);
            let (outer, inner, ie) = pool.install(|| {
                let (outer, e) = open_warm_keyed(20, drain);
                let token = GroupCore::token(20, e);
                assert_eq!(GroupCore::close_warm(token, no_lookup), Some(Closed::Warm));
                assert_eq!(kept(), 1, "the hot group, kept");
                // Dead, on the hot path and through the slot.
                assert_eq!(GroupCore::close_warm(token, no_lookup), None);
                assert_eq!(outer.close_idle_owned(e), None);
                let t = GroupCore::open_warm(None).expect("the hot group");
                assert_eq!(t, GroupCore::token(20, e + 1));
                // Nested in it: the hot group now.
                let (inner, ie) = open_warm_keyed(21, drain);
                let it = GroupCore::token(21, ie);
                assert_eq!(GroupCore::close_warm(it, no_lookup), Some(Closed::Warm));
                // The outer one: through the lookup, stacked.
                assert_eq!(
                    GroupCore::close_warm(t, || None),
                    None,
                    "no lookup, no close"
                );
                assert_eq!(GroupCore::close_warm(t, || Some(outer)), Some(Closed::Warm));
                assert_eq!(kept(), 2);
                assert_eq!(open_warm(None), Some((21, ie + 1)), "the hot one first");
                (outer, inner, ie + 1)
            });
            // Another thread closes the hot group: it frees it.
            std::thread::spawn(move || assert_eq!(inner.close(ie).ok(), Some(Closed::Free)))
                .join()
                .unwrap();
            pool.install(|| {
                assert_eq!(kept(), 1, "the freed group is not the worker's any more");
                // The stack's group opens instead, and is the hot one now.
                let (k, oe) = open_warm(None).expect("the stacked group");
                assert_eq!(k, 20);
                assert_eq!(
                    GroupCore::close_warm(GroupCore::token(20, oe), no_lookup),
                    Some(Closed::Warm)
                );
                assert_eq!(inner.epoch(), None, "the freed group stays closed");
                let _ = outer;
            });
            drop(pool);
            // The kept hot group goes back, once; the one another thread freed
            // does not (it is that thread's).
            wait_drained(20..=21, &[20]);
        },
    );
}

/// The hot path's close of a group whose epoch would wrap retires it:
/// not kept, not hot any more.
#[test]
fn a_hot_group_whose_epoch_would_wrap_is_retired() {
    alone("a_hot_group_whose_epoch_would_wrap_is_retired", || {
        assert_bias();
        pool(1).install(|| {
            let core: &'static GroupCore = Box::leak(Box::new(GroupCore::new()));
            core.state.store(word(u32::MAX, 0), Ordering::Relaxed);
            let key = WarmKey {
                key: 30,
                drain: no_drain,
            };
            // SAFETY: a closed group, opened by this thread alone, never freed.
            let e = unsafe { core.open_here(None, Some(key)) }.expect("opens");
            assert_eq!(e, u32::MAX);
            let token = GroupCore::token(30, e);
            let no_lookup = || -> Option<&'static GroupCore> { panic!("hot") };
            assert_eq!(
                GroupCore::close_warm(token, no_lookup),
                Some(Closed::Retired)
            );
            assert_eq!(kept(), 0);
            assert_eq!(open_warm(None), None);
            assert_eq!(GroupCore::close_warm(token, || Some(core)), None, "dead");
            assert_eq!(core.owned_by.load(Ordering::Relaxed), 0, "given up");
            // Retired through the slot (`close`, a C destroy's slow path): not
            // hot any more either.
            let core: &'static GroupCore = Box::leak(Box::new(GroupCore::new()));
            core.state.store(word(u32::MAX, 0), Ordering::Relaxed);
            // SAFETY: as above.
            let e = unsafe { core.open_here(None, Some(key)) }.expect("opens");
            let w = &WorkerThread::current().expect("a worker").warm_groups;
            assert!(w.is_hot(core));
            assert_eq!(core.close(e).ok(), Some(Closed::Retired));
            assert!(w.hot.get().is_none() && w.hot_token.get() == 0, "still hot");
            assert_eq!(kept(), 0);
        });
    });
}

/// A worker state that is leaked (`use_current_thread`) is never
/// dropped, so it could not give warm groups back: it keeps none.
#[test]
fn a_thread_made_a_worker_for_good_keeps_no_group_warm() {
    assert_bias();
    std::thread::spawn(|| {
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(1)
            .use_current_thread()
            .pin(false)
            .build()
            .unwrap();
        let (core, e) = open_warm_keyed(5, no_drain);
        assert_eq!(core.close_idle_owned(e), Some(Closed::Free));
        assert_eq!(kept(), 0);
        drop(pool);
    })
    .join()
    .unwrap();
}

/// The keys drained by the tests' groups (each test its own keys).
static DRAINED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn drain(key: u32) {
    DRAINED.lock().unwrap().push(key);
}

/// What was drained of the keys in `keys`, sorted.
fn drained(keys: RangeInclusive<u32>) -> Vec<u32> {
    let mut got: Vec<u32> = DRAINED
        .lock()
        .unwrap()
        .iter()
        .copied()
        .filter(|k| keys.contains(k))
        .collect();
    got.sort_unstable();
    got
}

/// Waits (up to 20 s: a worker exits after its pool is dropped) until the
/// keys in `keys` drained are `want`, then a little more: each once.
fn wait_drained(keys: RangeInclusive<u32>, want: &[u32]) {
    let start = Instant::now();
    while drained(keys.clone()) != want {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "drained {:?} of {want:?}",
            drained(keys.clone())
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(drained(keys), want, "each once");
}

#[test]
fn a_worker_that_exits_gives_its_warm_groups_back() {
    alone("a_worker_that_exits_gives_its_warm_groups_back", || {
        assert_bias();
        let pool = pool(1);
        let cores = pool.install(|| {
            [1000, 1001, 1002].map(|key| {
                let (core, e) = open_warm_keyed(key, drain);
                assert_eq!(core.close_idle_owned(e), Some(Closed::Warm));
                core
            })
        });
        assert!(
            drained(1000..=1002).is_empty(),
            "kept while the worker runs"
        );
        drop(pool);
        wait_drained(1000..=1002, &[1000, 1001, 1002]);
        // Disowned: the worker is gone.
        assert!(cores
            .iter()
            .all(|c| c.owned_by.load(Ordering::Relaxed) == 0));
    });
}

/// A worker that the thread pointer does not find (no entry in the
/// table: `current.rs`) takes the C API's slow paths: the warm open by the
/// thread-local (`open_warm_slow`, as `create_slow` does) and the close
/// through the slot (`close`, as `destroy_slow` does), which keep and
/// reopen its groups as the fast paths do, the hot one too.
#[cfg(all(
    target_arch = "x86_64",
    target_pointer_width = "64",
    target_os = "linux",
    not(miri)
))]
#[test]
fn a_worker_without_an_entry_keeps_its_groups_warm_through_the_slow_paths() {
    alone(
        "a_worker_without_an_entry_keeps_its_groups_warm_through_the_slow_paths",
        || {
            use crate::sched::current::tests::with_misses;
            assert_bias();
            let no_lookup =
                || -> Option<&'static GroupCore> { panic!("the hot group needs no lookup") };
            pool(1).install(|| {
                let (core, e) = open_warm_keyed(40, no_drain);
                let token = GroupCore::token(40, e);
                with_misses(|| {
                    assert_eq!(GroupCore::close_warm(token, no_lookup), None, "a miss");
                    assert_eq!(core.close(e).ok(), Some(Closed::Warm));
                    assert_eq!(kept(), 1);
                    assert_eq!(open_warm(None), None, "a miss");
                    let t = GroupCore::open_warm_slow(None).expect("kept, by the thread-local");
                    assert_eq!(t, GroupCore::token(40, e + 1));
                    assert_eq!(open_count(), 1);
                    // The hot group, closed through its slot.
                    assert_eq!(core.close(e + 1).ok(), Some(Closed::Warm));
                    assert_eq!(open_count(), 0);
                });
                // Found again: the fast paths take up where the slow ones left.
                let t = GroupCore::open_warm(None).expect("the hot group");
                assert_eq!(t, GroupCore::token(40, e + 2));
                assert_eq!(GroupCore::close_warm(t, no_lookup), Some(Closed::Warm));
                assert_eq!(kept(), 1);
            });
        },
    );
}
