//! Nested loops hand the *outer* loop's rest to an idle worker: a batch
//! of a loop offers the loop's rest while it runs, and the request of an
//! idle worker is served with the oldest offer on the busy worker's stack
//! (`src/sched/join/offer.rs`). Without that, a loop whose item runs a
//! long inner loop gives away only halves of the inner loop, and the
//! outer loop's other items wait.
//!
//! Each test runs on a pool of two workers (one to be busy, one to ask)
//! and fails after a timeout rather than hanging.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use terroir::prelude::*;
use terroir::ThreadPoolBuilder;

/// Runs `f` on a pool of two workers; fails if it takes over `secs`.
fn two_workers<R: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let _ = tx.send(pool.install(f));
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(r) => r,
        Err(_) => panic!("{what}: no result within {secs} s"),
    }
}

/// The first item's inner loop runs until the second item has run: only
/// a split of the outer loop while the inner one runs lets it end.
#[test]
fn an_outer_item_runs_while_the_first_items_inner_loop_does() {
    static SECOND_RAN: AtomicBool = AtomicBool::new(false);
    let found = two_workers(120, "the outer loop's second item never ran", || {
        (0..2u32).into_par_iter().for_each(|i| {
            if i == 1 {
                SECOND_RAN.store(true, Ordering::SeqCst);
            } else {
                // Polls between its batches: that is where the other
                // worker's request is served.
                let hit = (0..u64::MAX)
                    .into_par_iter()
                    .find_any(|_| SECOND_RAN.load(Ordering::SeqCst));
                assert!(hit.is_some());
            }
        });
        SECOND_RAN.load(Ordering::SeqCst)
    });
    assert!(found);
}

const OCTILLION: u128 = 1_000_000_000_000_000_000_000_000_000;

/// rayon's `octillion_flat` (tests/octillion.rs): 0..10^27 as three
/// nested ranges of 10^9 with `with_max_len(1000)` on each.
fn octillion_flat() -> impl ParallelIterator<Item = u128> {
    (0u32..1_000_000_000)
        .into_par_iter()
        .with_max_len(1_000)
        .map(|i| u64::from(i) * 1_000_000_000)
        .flat_map(|i| {
            (0u32..1_000_000_000)
                .into_par_iter()
                .with_max_len(1_000)
                .map(move |j| i + u64::from(j))
        })
        .map(|i| u128::from(i) * 1_000_000_000)
        .flat_map(|i| {
            (0u32..1_000_000_000)
                .into_par_iter()
                .with_max_len(1_000)
                .map(move |j| i + u128::from(j))
        })
}

/// rayon's `find_any_octillion_flat`: the match lies in the second half
/// of the outermost range, which the second worker must be given.
#[test]
fn find_any_in_the_second_half_of_an_octillion_flat_map() {
    let x = two_workers(120, "find_any over octillion_flat", || {
        octillion_flat().find_any(|x| *x > OCTILLION / 2)
    });
    assert!(x.is_some_and(|x| x > OCTILLION / 2));
}

/// rayon's `filter_find_any_octillion_flat`.
#[test]
fn filter_then_find_any_in_an_octillion_flat_map() {
    let x = two_workers(120, "filter + find_any over octillion_flat", || {
        octillion_flat()
            .filter(|x| *x > OCTILLION / 2)
            .find_any(|_| true)
    });
    assert!(x.is_some_and(|x| x > OCTILLION / 2));
}

/// rayon's `find_first_octillion_flat` (front to back: no split needed,
/// but the offers must not make it slower to stop).
#[test]
fn find_first_of_an_octillion_flat_map() {
    let x = two_workers(120, "find_first over octillion_flat", || {
        octillion_flat().find_first(|_| true)
    });
    assert_eq!(x, Some(0));
}

/// rayon's `find_last_octillion_flat`: `flat_map` runs back to front
/// under `find_last`, so the last item is found at once (front to back,
/// this got no result in 120 s).
#[test]
fn find_last_of_an_octillion_flat_map() {
    let x = two_workers(120, "find_last over octillion_flat", || {
        octillion_flat().find_last(|_| true)
    });
    assert_eq!(x, Some(OCTILLION - 1));
}

mod results {
    //! Nested loops give the same results as `std::iter` however their
    //! outer loops were split through offers (the pool's second worker
    //! asks for work all the time and is served with outer loops' rests).

    use std::sync::OnceLock;

    use proptest::prelude::*;
    use terroir::prelude::*;
    use terroir::{ThreadPool, ThreadPoolBuilder};

    fn pool() -> &'static ThreadPool {
        static POOL: OnceLock<ThreadPool> = OnceLock::new();
        POOL.get_or_init(|| ThreadPoolBuilder::new().num_threads(2).build().unwrap())
    }

    /// Inner lengths from the outer index: some long (the batches that run
    /// them are where offers are taken), some empty.
    fn inner_len(i: usize, seed: usize) -> usize {
        let h = i.wrapping_mul(2_654_435_761).wrapping_add(seed) % 97;
        if h < 5 {
            20_000 + h * 1_000
        } else {
            h % 13
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn flat_map_collects_in_order(
            n in 0usize..400,
            seed in 0usize..1000,
            max_len in prop_oneof![Just(usize::MAX), 1usize..64],
        ) {
            let want: Vec<(usize, usize)> = (0..n)
                .flat_map(|i| (0..inner_len(i, seed)).map(move |j| (i, j)))
                .collect();
            let got: Vec<(usize, usize)> = pool().install(|| {
                (0..n)
                    .into_par_iter()
                    .with_max_len(max_len)
                    .flat_map(|i| {
                        (0..inner_len(i, seed))
                            .into_par_iter()
                            .with_max_len(max_len)
                            .map(move |j| (i, j))
                    })
                    .collect()
            });
            prop_assert_eq!(got, want);
        }

        #[test]
        fn nested_for_each_sums_and_searches(
            n in 0usize..400,
            seed in 0usize..1000,
        ) {
            let v: Vec<u64> = (0..n as u64).collect();
            let want: u64 = v
                .iter()
                .map(|&i| (0..inner_len(i as usize, seed) as u64).map(|j| i ^ j).sum::<u64>())
                .sum();
            let (sum, first, any) = pool().install(|| {
                let sum: u64 = v
                    .par_iter()
                    .map(|&i| {
                        (0..inner_len(i as usize, seed) as u64)
                            .into_par_iter()
                            .map(|j| i ^ j)
                            .sum::<u64>()
                    })
                    .sum();
                let first = v
                    .par_iter()
                    .flat_map(|&i| (0..inner_len(i as usize, seed) as u64).into_par_iter().map(move |j| (i, j)))
                    .find_first(|&(_, j)| j == 7);
                let any = v.par_iter().any(|&i| {
                    (0..inner_len(i as usize, seed) as u64).into_par_iter().any(|j| j == 20_500)
                });
                (sum, first, any)
            });
            prop_assert_eq!(sum, want);
            let want_first = v
                .iter()
                .flat_map(|&i| (0..inner_len(i as usize, seed) as u64).map(move |j| (i, j)))
                .find(|&(_, j)| j == 7);
            prop_assert_eq!(first, want_first);
            let want_any = v.iter().any(|&i| inner_len(i as usize, seed) > 20_500);
            prop_assert_eq!(any, want_any);
        }

        /// `find_last` through `flat_map` runs the loops back to front;
        /// an inner or outer loop whose driver does not (`split`,
        /// `walk_tree_prefix`), or one that is not reversible (`chain`),
        /// meets the reversed search and must still give the last match.
        #[test]
        fn find_last_through_flat_maps_of_every_direction(
            n in 0usize..300,
            seed in 0usize..1000,
            m in 1u64..40,
        ) {
            let v: Vec<u64> = (0..n as u64).collect();
            let inner = |i: u64| inner_len(i as usize, seed) as u64;
            let items = |i: u64| (0..inner(i)).map(move |j| (i, j));
            let want = v.iter().flat_map(|&i| items(i)).rev().find(|&(_, j)| j % m == 0);
            let halves = |r: std::ops::Range<u64>| {
                terroir::iter::split(r, |r| {
                    let mid = r.start + (r.end - r.start) / 2;
                    if r.end - r.start < 2 { (r, None) } else { (r.start..mid, Some(mid..r.end)) }
                })
                .flat_map_iter(|r| r)
            };
            let pred = |&(_, j): &(u64, u64)| j % m == 0;
            let (plain, nested, inner_split, outer_split, chained) = pool().install(|| {
                let plain = v.par_iter().flat_map(|&i| (0..inner(i)).into_par_iter().map(move |j| (i, j))).find_last(pred);
                let nested = v
                    .par_iter()
                    .flat_map(|&i| {
                        (0..inner(i) / 8 + 1)
                            .into_par_iter()
                            .flat_map(move |k| (k * 8..(k * 8 + 8).min(inner(i))).into_par_iter())
                            .map(move |j| (i, j))
                    })
                    .find_last(pred);
                let inner_split = v.par_iter().flat_map(|&i| halves(0..inner(i)).map(move |j| (i, j))).find_last(pred);
                let outer_split = halves(0..n as u64)
                    .flat_map(|i| (0..inner(i)).into_par_iter().map(move |j| (i, j)))
                    .find_last(pred);
                let chained = v
                    .par_iter()
                    .flat_map(|&i| {
                        let mid = inner(i) / 2;
                        (0..mid).into_par_iter().chain(mid..inner(i)).map(move |j| (i, j))
                    })
                    .find_last(pred);
                (plain, nested, inner_split, outer_split, chained)
            });
            prop_assert_eq!(plain, want, "flat_map");
            prop_assert_eq!(nested, want, "flat_map in flat_map");
            prop_assert_eq!(inner_split, want, "split inside");
            prop_assert_eq!(outer_split, want, "split outside");
            prop_assert_eq!(chained, want, "chain inside");
        }
    }

    /// A panic in an inner loop's item, while outer rests are on offer and
    /// taken, reaches the caller once the other parts stopped, and the
    /// pool still works.
    #[test]
    fn a_panic_in_a_nested_loop_propagates_and_the_pool_survives() {
        for round in 0..20usize {
            let r = std::panic::catch_unwind(|| {
                pool().install(|| {
                    (0..200usize).into_par_iter().for_each(|i| {
                        (0..inner_len(i, round)).into_par_iter().for_each(|j| {
                            if i >= 150 && j == 3 {
                                panic!("boom {round}");
                            }
                        });
                    });
                })
            });
            let msg = r.expect_err("the panic propagates");
            let msg = msg.downcast_ref::<String>().expect("a String payload");
            assert_eq!(msg, &format!("boom {round}"));
            let s: usize = pool().install(|| (0..1000usize).into_par_iter().sum());
            assert_eq!(s, 499_500);
        }
    }
}

/// The rest of a loop whose batch runs on this worker is pending work of
/// this thread (rayon would have split it onto the deque).
#[test]
fn a_loops_rest_counts_as_pending_in_its_items() {
    let pool = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let seen = pool.install(|| {
        let first = AtomicBool::new(false);
        (0..1000u32).into_par_iter().for_each(|i| {
            if i == 0 {
                first.store(
                    terroir::current_thread_has_pending_tasks() == Some(true),
                    Ordering::SeqCst,
                );
            }
        });
        first.load(Ordering::SeqCst)
    });
    assert!(seen, "item 0 saw the other 999 as pending");
}
