//! The thread-pointer table: its protocol with made-up thread pointers
//! (collisions on purpose), concurrently and against a model, and the
//! ways an entry could outlive its thread: a worker's end, an adopted
//! worker's thread exit, a fork, a new thread on a dead worker's stack.
//!
//! Tests of the process's own table run alone in a child process
//! (`crate::sched::alone`): the table is the whole test binary's, and
//! other tests' workers would share it.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::table::{index, thread_pointer, Table, PROBES, TABLE};
use super::WorkerThread;
use crate::sched::worker::WorkerThread as Wt;
use crate::ThreadPoolBuilder;

thread_local! {
    static MISSING: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread's lookups are made to miss (`missing`).
pub(super) fn missing() -> bool {
    MISSING.with(Cell::get)
}

/// Runs `f` with the calling thread's lookups by the thread pointer
/// missing, as for a worker without an entry.
pub(crate) fn with_misses<R>(f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            MISSING.with(|m| m.set(false));
        }
    }
    MISSING.with(|m| m.set(true));
    let _reset = Reset;
    f()
}

/// [`crate::sched::alone`], for this module's tests.
fn alone(name: &str, body: impl FnOnce()) {
    crate::sched::alone(module_path!(), name, body);
}

/// A made-up worker pointer (never dereferenced).
fn fake(n: usize) -> *const WorkerThread {
    (0x1000 + n * 0x40) as *const WorkerThread
}

/// `n` thread pointers (page-aligned plus an offset, as real ones are)
/// from `first` on with the home of `first`.
fn colliding_from(first: usize, n: usize) -> Vec<usize> {
    let mut out = vec![first];
    let mut tp = first;
    while out.len() < n {
        tp += 0x1000;
        if index(tp) == index(first) {
            out.push(tp);
        }
    }
    out
}

fn colliding(n: usize) -> Vec<usize> {
    colliding_from(0x7f00_0000_06c0, n)
}

#[test]
fn a_thread_finds_only_its_own_entry() {
    let table = Table::new();
    let tps = colliding(PROBES + 1);
    let (a, b) = (tps[0], tps[PROBES]);
    assert_eq!(table.find(a), None);
    assert!(table.claim(a, fake(1)));
    assert_eq!(table.find(a), Some(fake(1)));
    // Same home, others: each its own entry of the window, until it is
    // full; nobody finds another's worker.
    for (i, &tp) in tps[1..PROBES].iter().enumerate() {
        assert_eq!(table.find(tp), None);
        assert!(table.claim(tp, fake(10 + i)));
        assert_eq!(table.find(tp), Some(fake(10 + i)));
    }
    assert_eq!(table.find(b), None);
    assert!(!table.claim(b, fake(2)), "the window is full");
    assert_eq!(table.find(b), None);
    // A free by a thread that holds nothing frees nothing.
    table.free(b);
    assert_eq!(table.find(a), Some(fake(1)));
    // A second claim by a holder keeps one entry, with the new worker.
    assert!(table.claim(a, fake(3)));
    assert_eq!(table.find(a), Some(fake(3)));
    assert!(!table.claim(b, fake(2)), "still full");
    table.free(a);
    assert_eq!(table.find(a), None);
    assert!(table.claim(b, fake(2)), "a's entry, free again");
    assert_eq!(table.find(b), Some(fake(2)));
    assert_eq!(table.find(a), None);
    assert_eq!(table.held(), PROBES);
    table.free_all();
    assert_eq!(table.held(), 0);
    assert_eq!(table.find(b), None);
}

#[test]
fn thread_pointers_one_stack_apart_spread() {
    // Stacks of 2 MiB plus a guard page (Rust's), 8 MiB (glibc's default,
    // aligned to 2 MiB by recent kernels) and 1 MiB: 256 threads each,
    // all with an entry.
    for spacing in [0x20_1000usize, 0x80_0000, 0x10_0000] {
        let table = Table::new();
        let top = 0x7f94_7edf_e6c0usize;
        let claimed = (0..256)
            .filter(|&i| table.claim(top - i * spacing, fake(i)))
            .count();
        assert_eq!(claimed, 256, "spacing {spacing:#x}");
    }
}

/// Threads whose pointers all share one home, more than its window has
/// entries, claim, find and free as fast as they can: a thread finds its
/// own worker or nothing, never another's, and at most `PROBES` hold.
#[test]
fn colliding_threads_never_find_each_others_workers() {
    const THREADS: usize = PROBES + 2;
    let table = Arc::new(Table::new());
    let holders = Arc::new(AtomicUsize::new(0));
    let bad = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(THREADS));
    let tps = colliding(THREADS);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (table, holders, bad, start) = (
                Arc::clone(&table),
                Arc::clone(&holders),
                Arc::clone(&bad),
                Arc::clone(&start),
            );
            let tp = tps[t];
            std::thread::spawn(move || {
                start.wait();
                let (mut held, mut refused) = (0u32, 0u32);
                for i in 0..if cfg!(debug_assertions) {
                    20_000
                } else {
                    200_000
                } {
                    let me = fake(t * 1_000_000 + i);
                    if table.claim(tp, me) {
                        held += 1;
                        if holders.fetch_add(1, Ordering::SeqCst) >= PROBES {
                            bad.store(true, Ordering::Relaxed);
                        }
                        if table.find(tp) != Some(me) {
                            bad.store(true, Ordering::Relaxed);
                        }
                        holders.fetch_sub(1, Ordering::SeqCst);
                        table.free(tp);
                    } else {
                        refused += 1;
                        if table.find(tp).is_some() {
                            bad.store(true, Ordering::Relaxed);
                        }
                    }
                    if table.find(tp).is_some() {
                        bad.store(true, Ordering::Relaxed);
                    }
                }
                (held, refused)
            })
        })
        .collect();
    let (held, _refused) = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .fold((0, 0), |(h, r), (h2, r2)| (h + h2, r + r2));
    assert!(
        !bad.load(Ordering::Relaxed),
        "a thread found a worker not its own, or too many held"
    );
    assert!(held > 0);
    assert_eq!(table.held(), 0);
}

#[derive(Clone, Debug)]
enum Op {
    Claim(usize),
    Free(usize),
    Find(usize),
    FreeAll,
}

const MODEL_THREADS: usize = 12;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..MODEL_THREADS).prop_map(Op::Claim),
        2 => (0..MODEL_THREADS).prop_map(Op::Free),
        3 => (0..MODEL_THREADS).prop_map(Op::Find),
        1 => Just(Op::FreeAll),
    ]
}

proptest! {
    /// Twelve threads, six to each of two homes whose windows do not
    /// overlap: the table answers as a model of at most `PROBES`
    /// holders a home, one entry each.
    #[test]
    fn the_table_holds_at_most_a_window_a_home(ops in proptest::collection::vec(op(), 1..300)) {
        let table = Table::new();
        let mut tps = colliding(MODEL_THREADS / 2);
        let mut second = 0x7f00_0000_06c0 + 0x1000;
        while index(second).abs_diff(index(tps[0])) < PROBES {
            second += 0x1000;
        }
        tps.extend(colliding_from(second, MODEL_THREADS / 2));
        let home = |t: usize| t / (MODEL_THREADS / 2);
        // thread -> its worker, for the holders.
        let mut model: HashMap<usize, usize> = HashMap::new();
        for (n, op) in ops.into_iter().enumerate() {
            match op {
                Op::Claim(t) => {
                    model.remove(&t);
                    let others = model.keys().filter(|&&h| home(h) == home(t)).count();
                    let expect = others < PROBES;
                    if expect {
                        model.insert(t, n);
                    }
                    prop_assert_eq!(table.claim(tps[t], fake(n)), expect);
                }
                Op::Free(t) => {
                    model.remove(&t);
                    table.free(tps[t]);
                }
                Op::Find(t) => {
                    prop_assert_eq!(table.find(tps[t]), model.get(&t).map(|&w| fake(w)));
                }
                Op::FreeAll => {
                    model.clear();
                    table.free_all();
                }
            }
            prop_assert_eq!(table.held(), model.len());
        }
    }
}

#[test]
fn workers_find_themselves_by_the_thread_pointer() {
    alone("workers_find_themselves_by_the_thread_pointer", || {
        let pool = ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let found = pool.broadcast(|_| {
            let by_tp = Wt::current_by_thread_pointer().map(|w| w as *const Wt as usize);
            let by_tls = Wt::current().map(|w| w as *const Wt as usize);
            (by_tp, by_tls)
        });
        for (by_tp, by_tls) in found {
            assert!(by_tls.is_some());
            assert_eq!(by_tp, by_tls, "a worker without an entry, alone");
        }
        // A thread that is no worker finds none.
        assert_eq!(TABLE.find(thread_pointer()), None);
        assert!(Wt::current_by_thread_pointer().is_none());
        // Made to miss, a worker finds none (what the C API's slow paths
        // are for).
        pool.install(|| {
            assert!(Wt::current_by_thread_pointer().is_some());
            with_misses(|| assert!(Wt::current_by_thread_pointer().is_none()));
            assert!(Wt::current_by_thread_pointer().is_some());
        });
    });
}

/// What a thread's exit found of its entry: its thread pointer, whether
/// it held the entry before its free, and whether it still did after.
static FREED_AT_EXIT: Mutex<Vec<(usize, bool, bool)>> = Mutex::new(Vec::new());

pub(super) fn freed_at_exit(tp: usize, before: bool, after: bool) {
    FREED_AT_EXIT.lock().unwrap().push((tp, before, after));
}

/// The number of exits recorded so far: taken by a live thread, the
/// first record of its pointer after this is its own exit's.
fn exits_so_far() -> usize {
    FREED_AT_EXIT.lock().unwrap().len()
}

/// Waits until the exit of the thread with pointer `tp`, alive when
/// `exits_so_far` said `from`, is recorded.
fn exit_of(tp: usize, from: usize) -> (bool, bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(&(_, before, after)) = FREED_AT_EXIT.lock().unwrap()[from..]
            .iter()
            .find(|e| e.0 == tp)
        {
            return (before, after);
        }
        assert!(
            Instant::now() < deadline,
            "the thread of {tp:#x} did not exit"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_worker_that_stops_frees_its_entry_and_an_adopted_one_at_its_exit() {
    alone(
        "a_worker_that_stops_frees_its_entry_and_an_adopted_one_at_its_exit",
        || {
            // A pool's worker frees its entry when it stops (`clear`): its
            // thread's exit finds the entry free already.
            let pool = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            let (tp, held, from) = pool.install(|| {
                let tp = thread_pointer();
                (tp, TABLE.find(tp).is_some(), exits_so_far())
            });
            assert!(held, "a worker without an entry, alone");
            drop(pool);
            assert_eq!(
                exit_of(tp, from),
                (false, false),
                "the stopped worker's entry at its exit"
            );
            // A new thread on the dead worker's stack (glibc caches
            // stacks) has its thread pointer, and finds nothing.
            let mut reused = false;
            for _ in 0..20 {
                let (same, found) = std::thread::spawn(move || {
                    (
                        thread_pointer() == tp,
                        Wt::current_by_thread_pointer().is_some(),
                    )
                })
                .join()
                .unwrap();
                assert!(!found, "a new thread found a worker");
                reused |= same;
            }
            // glibc caches thread stacks (musl frees them).
            assert!(
                reused || !cfg!(target_env = "gnu"),
                "no new thread reused the worker's stack"
            );
            // Adopted (`use_current_thread`): a worker for the rest of its
            // thread's life, whose exit frees the entry.
            let adopted = std::thread::spawn(|| {
                let pool = ThreadPoolBuilder::new()
                    .num_threads(2)
                    .use_current_thread()
                    .build()
                    .unwrap();
                let tp = thread_pointer();
                let held = TABLE.find(tp).is_some();
                drop(pool);
                assert_eq!(TABLE.find(tp).is_some(), held, "still a worker");
                (tp, held, exits_so_far())
            });
            let (adopted_tp, adopted_held, adopted_from) = adopted.join().unwrap();
            assert!(adopted_held, "an adopted worker without an entry, alone");
            assert_eq!(
                exit_of(adopted_tp, adopted_from),
                (true, false),
                "the adopted thread's entry at its exit"
            );
        },
    );
}

#[test]
fn a_fork_child_finds_no_entries() {
    alone("a_fork_child_finds_no_entries", || {
        let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let held = pool
            .broadcast(|_| TABLE.find(thread_pointer()).is_some())
            .into_iter()
            .filter(|&h| h)
            .count();
        assert_eq!(held, 2, "workers without entries, alone");
        assert_eq!(TABLE.held(), 2);
        // SAFETY: the child only reads atomics and calls `_exit`, which a
        // child of a multi-threaded process may.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let left = TABLE.held();
            // SAFETY: ends the child at once (no atexit handlers, no
            // unwinding).
            unsafe { libc::_exit(left.min(100) as i32) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child; `status` is writable.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(rc, pid);
        assert!(
            libc::WIFEXITED(status),
            "the child did not exit: {status:#x}"
        );
        assert_eq!(libc::WEXITSTATUS(status), 0, "entries left in the child");
        assert_eq!(TABLE.held(), 2, "the parent's are its own");
        drop(pool);
    });
}
