//! Parallel iterators on bad or extreme input, and closures that panic:
//! empty sources, ranges at the ends of their types, zero chunk sizes,
//! zips of unequal lengths; a panic on one element reaches the caller
//! after the other pieces stop, leaks nothing, drops nothing twice, and
//! leaves the pool usable. Every loop splits after every batch
//! (`set_split_stress`), so the panics cross splits.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::{mpsc, OnceLock};
use std::thread;
use std::time::Duration;

use terroir::prelude::*;
use terroir::{Policy, ThreadPool, ThreadPoolBuilder};

fn pools() -> &'static [ThreadPool] {
    static POOLS: OnceLock<Vec<ThreadPool>> = OnceLock::new();
    POOLS.get_or_init(|| {
        terroir::iter::set_split_stress(true);
        quiet_panics();
        Policy::ALL
            .iter()
            .map(|&p| {
                ThreadPoolBuilder::new()
                    .num_threads(3)
                    .policy(p)
                    .build()
                    .unwrap()
            })
            .collect()
    })
}

/// Keeps the expected panics (messages starting with `expected:`) out of
/// the output.
fn quiet_panics() {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
            .unwrap_or_default();
        if !msg.starts_with("expected:")
            && !msg.contains("must not be zero")
            && !msg.contains("same length")
            && !msg.contains("step != 0")
            && !msg.contains("out of range")
        {
            default(info);
        }
    }));
}

/// Runs `f` on another thread and fails if it takes more than a minute.
fn within<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(r)) => r,
        Ok(Err(p)) => panic::resume_unwind(p),
        Err(_) => panic!("{what} hung"),
    }
}

/// The message of a panic payload.
fn message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

static LIVE: AtomicIsize = AtomicIsize::new(0);
static DROPS: AtomicUsize = AtomicUsize::new(0);

/// A value whose creations and drops are counted.
struct Tracked(u64);

impl Tracked {
    fn new(x: u64) -> Tracked {
        LIVE.fetch_add(1, Ordering::SeqCst);
        Tracked(x)
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::SeqCst);
        DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_panic_on_one_element_reaches_the_caller_and_the_pool_stays_usable() {
    within("panicking loops", || {
        for pool in pools() {
            for at in [0u64, 1, 4999, 9999] {
                let r = panic::catch_unwind(AssertUnwindSafe(|| {
                    pool.install(|| {
                        (0..10_000u64).into_par_iter().for_each(|i| {
                            if i == at {
                                panic!("expected: boom at {i}");
                            }
                        })
                    })
                }));
                let p = r.expect_err("the panic propagates");
                assert_eq!(message(&*p), format!("expected: boom at {at}"));
                // The pool still works.
                assert_eq!(
                    pool.install(|| (0..1000u64).into_par_iter().sum::<u64>()),
                    499_500
                );
            }
            // In collect, reduce, zip and from the global pool too.
            for f in [
                (|| {
                    drop(
                        (0..5000)
                            .into_par_iter()
                            .map(|i: u32| if i == 3333 { panic!("expected: c") } else { i })
                            .collect::<Vec<_>>(),
                    )
                }) as fn(),
                || {
                    let _ = (0..5000).into_par_iter().map(|i: u32| i).reduce(
                        || 0,
                        |a, b| {
                            if b == 4000 {
                                panic!("expected: r")
                            } else {
                                a.max(b)
                            }
                        },
                    );
                },
                || {
                    (0..100)
                        .into_par_iter()
                        .zip(0..100)
                        .for_each(|(a, _): (u32, u32)| {
                            if a == 99 {
                                panic!("expected: z")
                            }
                        })
                },
            ] {
                assert!(panic::catch_unwind(AssertUnwindSafe(|| pool.install(f))).is_err());
                assert!(panic::catch_unwind(f).is_err(), "from outside the pool");
            }
            assert_eq!(pool.install(|| (0..10).into_par_iter().count()), 10);
        }
    });
}

#[test]
fn owned_items_are_dropped_once_when_a_loop_panics_or_stops_early() {
    within("owned items", || {
        for pool in pools() {
            let before = DROPS.load(Ordering::SeqCst);
            let v: Vec<Tracked> = (0..10_000).map(Tracked::new).collect();
            let r = panic::catch_unwind(AssertUnwindSafe(|| {
                pool.install(|| {
                    v.into_par_iter()
                        .map(|t| {
                            if t.0 == 6000 {
                                panic!("expected: drop test");
                            }
                            t
                        })
                        .collect::<Vec<Tracked>>()
                })
            }));
            assert!(r.is_err());
            assert_eq!(LIVE.load(Ordering::SeqCst), 0, "every item dropped");
            assert_eq!(DROPS.load(Ordering::SeqCst) - before, 10_000, "none twice");
            // Stopping early (find_first) drops the rest.
            let v: Vec<Tracked> = (0..10_000).map(Tracked::new).collect();
            let found = pool.install(|| v.into_par_iter().find_first(|t| t.0 == 77));
            assert_eq!(found.map(|t| t.0), Some(77));
            assert_eq!(LIVE.load(Ordering::SeqCst), 0);
            // Zipped with a shorter iterator: the extra items are dropped.
            let v: Vec<Tracked> = (0..100).map(Tracked::new).collect();
            let n = pool.install(|| v.into_par_iter().zip(0..10).count());
            assert_eq!((n, LIVE.load(Ordering::SeqCst)), (10, 0));
            // A drain that panics still moves the tail down.
            let mut v: Vec<Tracked> = (0..1000).map(Tracked::new).collect();
            let r = panic::catch_unwind(AssertUnwindSafe(|| {
                pool.install(|| {
                    v.par_drain(100..900).for_each(|t| {
                        if t.0 == 500 {
                            panic!("expected: drain")
                        }
                    })
                })
            }));
            assert!(r.is_err());
            assert_eq!(v.len(), 200);
            assert_eq!(v[100].0, 900);
            drop(v);
            assert_eq!(LIVE.load(Ordering::SeqCst), 0);
        }
    });
}

#[test]
fn empty_sources_yield_nothing() {
    for pool in pools() {
        pool.install(|| {
            let e: Vec<u32> = Vec::new();
            assert_eq!(e.par_iter().sum::<u32>(), 0);
            assert_eq!(e.par_iter().min(), None);
            assert_eq!(e.par_iter().copied().reduce_with(|a, b| a + b), None);
            assert_eq!(e.par_chunks(3).count(), 0);
            assert_eq!(e.par_windows(3).count(), 0);
            assert_eq!(e.clone().into_par_iter().collect::<Vec<_>>(), e);
            assert_eq!((5..5).into_par_iter().count(), 0);
            #[allow(clippy::reversed_empty_ranges)]
            let reversed = (9..3).into_par_iter().count();
            assert_eq!(reversed, 0);
            #[allow(clippy::reversed_empty_ranges)]
            let reversed_inclusive = (3..=2u8).into_par_iter().count();
            assert_eq!(reversed_inclusive, 0);
            assert_eq!(None::<u32>.into_par_iter().count(), 0);
            assert_eq!(terroir::iter::empty::<u8>().rev().count(), 0);
            assert_eq!("".par_chars().count(), 0);
            assert_eq!(e.par_iter().zip(0..10).count(), 0);
            assert!(e.par_iter().all(|_| false));
            assert!(!e.par_iter().any(|_| true));
            assert_eq!(
                e.par_iter().fold(|| 1, |a, _| a).sum::<u32>(),
                1,
                "one piece, its identity"
            );
        });
    }
}

#[test]
fn ranges_at_the_ends_of_their_types() {
    for pool in pools() {
        pool.install(|| {
            let top: Vec<usize> = (usize::MAX - 5..usize::MAX).into_par_iter().collect();
            assert_eq!(top, (usize::MAX - 5..usize::MAX).collect::<Vec<_>>());
            assert_eq!((usize::MAX - 3..=usize::MAX).into_par_iter().count(), 4);
            assert_eq!(
                (usize::MAX - 3..=usize::MAX).into_par_iter().max(),
                Some(usize::MAX)
            );
            let all = (i64::MIN..i64::MAX).into_par_iter();
            assert_eq!(all.len(), usize::MAX);
            assert_eq!(
                (i64::MIN..i64::MAX)
                    .into_par_iter()
                    .find_first(|&x| x > i64::MIN + 5),
                Some(i64::MIN + 6)
            );
            assert_eq!(
                (i64::MIN..i64::MAX)
                    .into_par_iter()
                    .rev()
                    .take(2)
                    .collect::<Vec<_>>(),
                [i64::MAX - 1, i64::MAX - 2]
            );
            assert_eq!(
                (i64::MIN..i64::MAX)
                    .into_par_iter()
                    .skip(usize::MAX - 1)
                    .collect::<Vec<_>>(),
                [i64::MAX - 1]
            );
            // 2^64 values: too many to index; still searchable.
            assert_eq!(
                (0..=u64::MAX).into_par_iter().find_first(|&x| x >= 3),
                Some(3)
            );
            assert_eq!((0..=u64::MAX).into_par_iter().take_any(5).count(), 5);
            assert_eq!(
                (i128::MIN..i128::MAX)
                    .into_par_iter()
                    .find_first(|&x| x > i128::MIN + 1),
                Some(i128::MIN + 2)
            );
            assert_eq!((u128::MAX - 2..=u128::MAX).into_par_iter().count(), 3);
            assert_eq!((i8::MIN..=i8::MAX).into_par_iter().len(), 256);
            assert_eq!(
                (i8::MIN..=i8::MAX)
                    .into_par_iter()
                    .map(i32::from)
                    .sum::<i32>(),
                -128
            );
            assert_eq!(
                (u8::MAX..=u8::MAX).into_par_iter().collect::<Vec<_>>(),
                [255]
            );
        });
    }
}

#[test]
fn zero_lengths_and_sizes() {
    let pool = &pools()[0];
    pool.install(|| {
        assert_eq!((0..100).into_par_iter().with_min_len(0).sum::<i32>(), 4950);
        assert_eq!((0..100).into_par_iter().with_max_len(0).sum::<i32>(), 4950);
        assert_eq!(
            (0..100)
                .into_par_iter()
                .with_min_len(usize::MAX)
                .sum::<i32>(),
            4950
        );
    });
    let v = [1, 2, 3];
    let mut w = vec![1, 2, 3];
    type Case<'a> = (&'static str, Box<dyn Fn() + std::panic::RefUnwindSafe + 'a>);
    let cases: Vec<Case<'_>> = vec![
        (
            "chunk_size must not be zero",
            Box::new(|| drop((0..10).into_par_iter().chunks(0))),
        ),
        (
            "chunk_size must not be zero",
            Box::new(|| drop(v.par_chunks(0))),
        ),
        (
            "chunk_size must not be zero",
            Box::new(|| drop(v.par_chunks_exact(0))),
        ),
        (
            "chunk_size must not be zero",
            Box::new(|| drop(v.par_rchunks(0))),
        ),
        (
            "window_size must not be zero",
            Box::new(|| {
                let _ = v.par_windows(0);
            }),
        ),
        (
            "step != 0",
            Box::new(|| drop((0..10).into_par_iter().step_by(0))),
        ),
        (
            "iterators must have the same length",
            Box::new(|| drop((0..10).into_par_iter().zip_eq(0..9))),
        ),
    ];
    for (want, f) in cases {
        let p = panic::catch_unwind(&*f).expect_err(want);
        assert!(
            message(&*p).contains(want),
            "{want}: got {:?}",
            message(&*p)
        );
    }
    let p = panic::catch_unwind(AssertUnwindSafe(|| drop(w.par_chunks_mut(0)))).unwrap_err();
    assert!(message(&*p).contains("chunk_size must not be zero"));
    let p = panic::catch_unwind(AssertUnwindSafe(|| drop(w.par_drain(2..5)))).unwrap_err();
    assert!(message(&*p).contains("out of range"), "{}", message(&*p));
}

#[test]
fn zips_of_unequal_lengths_take_the_shortest() {
    for pool in pools() {
        pool.install(|| {
            let a: Vec<u32> = (0..1000).collect();
            let b: Vec<u32> = (0..17).collect();
            let z: Vec<(u32, u32)> = a.par_iter().copied().zip(b.par_iter().copied()).collect();
            assert_eq!(z.len(), 17);
            let z: Vec<(u32, u32)> = b
                .par_iter()
                .copied()
                .zip(&a)
                .map(|(x, &y)| (x, y))
                .rev()
                .collect();
            assert_eq!(z.first(), Some(&(16, 16)));
            assert_eq!(a.par_iter().zip(b.par_iter()).zip(0..5).len(), 5);
            let mut m = vec![0u32; 10];
            m.par_iter_mut().zip(&a).for_each(|(m, a)| *m = *a);
            assert_eq!(m, (0..10).collect::<Vec<_>>());
        });
    }
}

/// Counts a closure as running while it lives (also when it unwinds).
struct Running<'a>(&'a AtomicIsize);

impl<'a> Running<'a> {
    fn enter(n: &'a AtomicIsize) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        Running(n)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn a_panic_reaches_the_caller_only_after_the_other_pieces_stop() {
    within("a panic with other pieces in flight", || {
        for pool in pools() {
            // Split stress splits after the first element: element 1 is
            // the first of the half the caller keeps, and it waits until
            // a closure of the published half runs on another worker
            // before it panics. The first closure that sees the panic
            // thrown runs 50 ms longer: the caller must not see the panic before it
            // ends (a `join` that rethrew without waiting for its other
            // half would fail here).
            let overlapped = AtomicUsize::new(0);
            for _ in 0..5 {
                let running = AtomicIsize::new(0);
                let started = AtomicUsize::new(0);
                let thrown = AtomicUsize::new(0);
                let r = panic::catch_unwind(AssertUnwindSafe(|| {
                    pool.install(|| {
                        (0..200u32).into_par_iter().for_each(|i| {
                            let _r = Running::enter(&running);
                            started.fetch_add(1, Ordering::SeqCst);
                            if i == 1 {
                                let t = std::time::Instant::now();
                                while running.load(Ordering::SeqCst) < 2
                                    && t.elapsed() < Duration::from_secs(1)
                                {
                                    thread::yield_now();
                                }
                                if running.load(Ordering::SeqCst) >= 2 {
                                    overlapped.fetch_add(1, Ordering::SeqCst);
                                }
                                thrown.store(1, Ordering::SeqCst);
                                panic!("expected: boom at {i}");
                            }
                            thread::sleep(Duration::from_millis(2));
                            if thrown
                                .compare_exchange(1, 2, Ordering::SeqCst, Ordering::SeqCst)
                                .is_ok()
                            {
                                thread::sleep(Duration::from_millis(50));
                            }
                        })
                    })
                }));
                let p = r.expect_err("the panic propagates");
                assert_eq!(message(&*p), "expected: boom at 1");
                assert_eq!(
                    running.load(Ordering::SeqCst),
                    0,
                    "a closure of the loop still runs when the panic reaches the caller"
                );
                let n = started.load(Ordering::SeqCst);
                thread::sleep(Duration::from_millis(20));
                assert_eq!(
                    started.load(Ordering::SeqCst),
                    n,
                    "a closure of the loop started after the panic reached the caller"
                );
            }
            assert!(
                overlapped.load(Ordering::SeqCst) > 0,
                "no panic was thrown while another piece ran: the test tested nothing"
            );
            // And the pool still works.
            assert_eq!(
                pool.install(|| (0..1000u64).into_par_iter().sum::<u64>()),
                499_500
            );
        }
    });
}

#[test]
fn loops_run_on_the_pool_of_install_or_else_the_global_pool() {
    within("loops on their pools", || {
        let pool = ThreadPoolBuilder::new()
            .num_threads(2)
            .thread_name(|i| format!("iter-install-{i}"))
            .build()
            .unwrap();
        let name = || thread::current().name().unwrap_or("").to_owned();
        let inside: Vec<String> = pool.install(|| {
            (0..5000u32)
                .into_par_iter()
                .with_max_len(16)
                .map(|_| name())
                .collect()
        });
        assert!(
            inside.iter().all(|n| n.starts_with("iter-install-")),
            "{inside:?}"
        );
        // A loop in a job spawned on the pool (not `install`) also stays there.
        let (tx, rx) = mpsc::channel();
        pool.spawn(move || {
            let names: Vec<String> = (0..1000u32).into_par_iter().map(|_| name()).collect();
            tx.send(names).unwrap();
        });
        let spawned = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert!(
            spawned.iter().all(|n| n.starts_with("iter-install-")),
            "{spawned:?}"
        );
        // Outside every pool: the global pool's workers run it.
        let outside: Vec<(String, Option<usize>)> = (0..5000u32)
            .into_par_iter()
            .with_max_len(16)
            .map(|_| (name(), terroir::current_thread_index()))
            .collect();
        assert!(
            outside
                .iter()
                .all(|(n, i)| !n.starts_with("iter-install-") && i.is_some()),
            "{outside:?}"
        );
    });
}
