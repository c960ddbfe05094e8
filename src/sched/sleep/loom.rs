//! loom models of the sleep protocol (and of the latch state it works
//! with, and of the latch of threads outside the pool): every interleaving
//! of a few threads, with the real `Sleep`, `LatchState` and `LockLatch`
//! code (built over loom's primitives, see `sync.rs`). A lost
//! wake-up shows as a deadlock: every thread blocked, with work left.
//!
//! Run with `scripts/loom.sh` (`RUSTFLAGS="--cfg loom" cargo test --lib
//! --release sched::sleep::loom`).

use loom::sync::atomic::{AtomicBool, AtomicUsize};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

use super::{LastLook, Sleep, Wake};
use crate::sched::latch::LatchState;
use crate::sched::sync::Ordering;

/// Checks `f` under every interleaving with at most `preemptions` forced
/// thread switches (the bound keeps CI's run short; lost wake-ups need
/// one or two).
fn model(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b.check(f);
}

/// A stand-in for a pool's queues: a count of jobs, pushed with Release
/// and taken with an AcqRel read-modify-write, as crossbeam's are.
#[derive(Default)]
struct Queue(AtomicUsize);

impl Queue {
    fn push(&self) {
        self.0.fetch_add(1, Ordering::Release);
    }

    fn take(&self) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// How many jobs ran; the main thread waits for a number of them by
/// blocking (not spinning), so that a lost job is a deadlock loom reports.
#[derive(Default)]
struct Done {
    count: Mutex<usize>,
    cv: Condvar,
}

impl Done {
    fn one(&self) {
        *self.count.lock().unwrap() += 1;
        self.cv.notify_all();
    }

    fn wait_for(&self, n: usize) {
        let mut c = self.count.lock().unwrap();
        while *c < n {
            c = self.cv.wait(c).unwrap();
        }
    }
}

/// One worker of a model: whether it starts as a searcher, and how many
/// jobs it runs before it stays busy for good (a long job: it never looks
/// at the queues or parks again), if it ever does.
#[derive(Clone, Copy)]
struct Role {
    searching: bool,
    jobs: Option<usize>,
}

/// A worker's loop, reduced to the protocol (`sleep/wait.rs`): take a job
/// (handing over if it searched), else park with a last look at the
/// queue; exit once `stop` is set and nothing is left, or once it has run
/// its share of jobs (see [`Role`]).
fn worker(w: usize, role: Role, sleep: &Sleep, queue: &Queue, done: &Done, stop: &AtomicBool) {
    let mut searching = role.searching;
    let mut ran = 0;
    let stop_searching = |searching: &mut bool| {
        if std::mem::take(searching) {
            sleep.stop_searching(0);
        }
    };
    loop {
        if role.jobs == Some(ran) {
            return; // busy for good
        }
        if queue.take() {
            stop_searching(&mut searching);
            done.one();
            ran += 1;
            continue;
        }
        if stop.load(Ordering::SeqCst) {
            stop_searching(&mut searching);
            return;
        }
        let mut took = false;
        let wake = sleep.park(w, std::mem::take(&mut searching), || {
            if queue.take() {
                took = true;
                LastLook::TookWork
            } else if stop.load(Ordering::SeqCst) {
                LastLook::StayAwake
            } else {
                LastLook::Park
            }
        });
        if wake == Some(Wake::AsSearcher) {
            searching = true;
        }
        if took {
            stop_searching(&mut searching);
            done.one();
            ran += 1;
        }
    }
}

/// Runs one worker per role while the main thread pushes `jobs` jobs,
/// each announced with `new_work`, waits until every job ran, then stops
/// the workers. The pool has one more worker, busy throughout
/// (it never parks), so that the searcher limit (half the workers)
/// allows two searchers.
fn run(roles: &[Role], jobs: usize) {
    let sleep = Arc::new(Sleep::new(vec![0; roles.len() + 1], 1));
    let queue = Arc::new(Queue::default());
    let done = Arc::new(Done::default());
    let stop = Arc::new(AtomicBool::new(false));
    for _ in roles.iter().filter(|r| r.searching) {
        assert!(sleep.try_start_searching());
    }
    let handles: Vec<_> = roles
        .iter()
        .enumerate()
        .map(|(w, &role)| {
            let (sleep, queue, done, stop) =
                (sleep.clone(), queue.clone(), done.clone(), stop.clone());
            thread::spawn(move || worker(w, role, &sleep, &queue, &done, &stop))
        })
        .collect();
    // The main thread is the producer (one thread fewer to interleave).
    for _ in 0..jobs {
        queue.push();
        sleep.new_work(0);
    }
    done.wait_for(jobs);
    stop.store(true, Ordering::SeqCst);
    sleep.wake_all();
    for h in handles {
        h.join().unwrap();
    }
}

const SLEEPER: Role = Role {
    searching: false,
    jobs: None,
};

/// A producer's push and a worker's registration race: either the
/// producer sees the sleeper (and wakes it) or the sleeper's last look
/// sees the job (the SeqCst RMW / SeqCst fence pairing of README §3).
#[test]
fn a_job_pushed_while_a_worker_parks_is_never_lost() {
    model(3, || run(&[SLEEPER], 1));
}

/// The hand-over race of README §3: two searchers that each run one long
/// job, a sleeper, three jobs. One searcher takes a job while the other
/// still counts (so the producer wakes nobody), then the other registers
/// to park and finds the second job in its last look. Without the
/// hand-over in `park`, the third job waits with the sleeper asleep and
/// both searchers busy.
#[test]
fn searchers_that_find_work_hand_over() {
    let busy_searcher = Role {
        searching: true,
        jobs: Some(1),
    };
    model(1, move || run(&[busy_searcher, busy_searcher, SLEEPER], 3));
}

/// A worker waiting for its latch parks (UNSET → SLEEPING after it
/// registered) while another thread sets the latch: either the setter's
/// swap sees SLEEPING and wakes the owner, or the owner's compare-exchange
/// fails and it does not park (`sleep/wait.rs`, `WorkerLatch::set`).
#[test]
fn a_latch_set_while_its_owner_parks_wakes_it() {
    model(3, || {
        let sleep = Arc::new(Sleep::new(vec![0], 1));
        let latch = Arc::new(LatchState::new());
        let setter = {
            let (sleep, latch) = (sleep.clone(), latch.clone());
            thread::spawn(move || {
                if latch.set() {
                    sleep.wake_specific(0);
                }
            })
        };
        while !latch.probe() {
            sleep.park(0, false, || {
                if !latch.get_sleepy() {
                    return LastLook::StayAwake;
                }
                LastLook::Park
            });
            latch.wake_up();
        }
        setter.join().unwrap();
        assert_eq!(sleep.counts(), (0, 0));
    });
}

/// The latch of a thread outside the pool (`LockLatch`): its waiter looks
/// once (under loom, in place of its spin), then blocks, while the job
/// sets it. Either the setter's swap sees SLEEPING and hands `done` over
/// under the mutex, or the waiter's exchange fails on SET: the waiter
/// never blocks for good, and it sees the job's write (a Relaxed store
/// before the set). Twice in a row, so that the reset is checked too.
#[test]
fn a_lock_latch_set_while_its_waiter_blocks_wakes_it() {
    use crate::sched::latch::{Latch, LockLatch};
    model(3, || {
        let latch = Arc::new(LockLatch::default());
        let data = Arc::new(AtomicUsize::new(0));
        for round in 1..=2 {
            let setter = {
                let (latch, data) = (latch.clone(), data.clone());
                thread::spawn(move || {
                    data.store(round, Ordering::Relaxed);
                    // SAFETY: the latch lives in the `Arc`, beyond the set.
                    unsafe { LockLatch::set(&*latch) };
                })
            };
            latch.wait_and_reset();
            assert_eq!(data.load(Ordering::Relaxed), round, "the job's write");
            setter.join().unwrap();
        }
    });
}

/// An increment with a plain load and store, made under a lock: two
/// threads inside the lock at once lose one in some interleaving.
fn bump(count: &AtomicUsize) {
    let v = count.load(Ordering::Relaxed);
    count.store(v + 1, Ordering::Relaxed);
}

/// A task group's owner bias (`group/bias.rs`): the owner takes the lock
/// twice with plain stores, another thread once (revoking the bias, then
/// the compare-and-swap lock). Each increments a counter with a plain
/// load and store under the lock: two threads inside at once would lose
/// an increment in some interleaving. After the revoke the group is no
/// longer owned. (The real barrier pair is a compiler fence and
/// `membarrier`; here both are SeqCst fences.)
#[test]
fn an_owned_group_is_locked_by_one_thread_at_a_time() {
    use crate::sched::group::loom_hooks as hooks;
    use crate::sched::group::GroupCore;
    const OWNER: usize = 0x1000;
    model(2, || {
        let core = Arc::new(GroupCore::new());
        let epoch = hooks::open_owned(&core, OWNER);
        let count = Arc::new(AtomicUsize::new(0));
        let other = {
            let (core, count) = (core.clone(), count.clone());
            thread::spawn(move || {
                let g = hooks::lock_as(&core, epoch, 0);
                bump(&count);
                drop(g);
            })
        };
        for _ in 0..2 {
            let g = hooks::lock_as(&core, epoch, OWNER);
            bump(&count);
            drop(g);
        }
        other.join().unwrap();
        assert_eq!(
            count.load(Ordering::Relaxed),
            3,
            "two threads held the lock at once"
        );
        assert_eq!(
            hooks::owned_and_unlocked(&core),
            (false, true),
            "the revoke ends the bias; the lock is free"
        );
    });
}

/// A warm group (`group/warm.rs`): the owner closes it through its bias
/// and opens it again under the next epoch with only the state store,
/// while another thread locks it under both epochs (a stale handle, and a
/// guessed one). Its revoke of the first epoch may land after the
/// reopen; whatever the order, the two never hold the lock at once, and
/// the reopened group is open under the next epoch.
#[test]
fn a_warm_reopen_racing_a_stale_lock_is_exclusive() {
    use crate::sched::group::loom_hooks as hooks;
    use crate::sched::group::GroupCore;
    const OWNER: usize = 0x1000;
    model(2, || {
        let core = Arc::new(GroupCore::new());
        let count = Arc::new(AtomicUsize::new(0));
        let epoch = hooks::open_owned(&core, OWNER);
        let other = {
            let (core, count) = (core.clone(), count.clone());
            thread::spawn(move || {
                let mut held = 0;
                for e in [epoch, epoch + 1] {
                    if let Some(g) = hooks::try_lock_as(&core, e, 0) {
                        bump(&count);
                        held += 1;
                        drop(g);
                    }
                }
                held
            })
        };
        let mut owner_held = 0;
        if let Some(next) = hooks::close_owned(&core, epoch, OWNER) {
            assert_eq!(next, epoch + 1);
            let reopened = hooks::reopen_kept(&core);
            assert_eq!(reopened, next);
            let g = hooks::lock_as(&core, next, OWNER);
            bump(&count);
            owner_held += 1;
            drop(g);
        }
        let other_held = other.join().unwrap();
        assert_eq!(
            count.load(Ordering::Relaxed),
            owner_held + other_held,
            "two threads held the lock at once"
        );
        if owner_held == 1 {
            assert_eq!(core.epoch(), Some(epoch + 1), "open under the next epoch");
        }
    });
}

/// A late owner (the second review's race): the owner of the first
/// epoch checks the state and its ownership, and before it enters its
/// bias another thread revokes, locks and closes the group (a destroy
/// racing the owner's use of the handle), and a second worker opens it
/// and locks it. The late owner must neither get in (the revoke of its
/// epoch outlives the reopen: before the revoke named its epoch, the
/// reopen's reset let it in, two threads in the lock and the epoch set
/// back by its unlock) nor clear the `owner_in` of a later owner's bias
/// (its back-out did, which would let a revoke of the later epoch in
/// beside that owner: the group now opens owned only for its last owner,
/// which here is the late one, so the second worker takes the shared
/// lock). The second worker then closes its group (its close gives up no
/// ownership but its own: a review found the close clearing the late
/// owner's, which let the next open take the bias beside it) and opens
/// and locks it once more.
#[test]
fn a_late_owner_neither_enters_nor_clears_a_later_owners_bias() {
    use crate::sched::group::loom_hooks as hooks;
    use crate::sched::group::GroupCore;
    const LATE: usize = 0x1000;
    const NEXT: usize = 0x2000;
    model(2, || {
        let core = Arc::new(GroupCore::new());
        let count = Arc::new(AtomicUsize::new(0));
        let epoch = hooks::open_owned(&core, LATE);
        let late = {
            let (core, count) = (core.clone(), count.clone());
            thread::spawn(move || {
                let got = hooks::try_lock_as(&core, epoch, LATE);
                let ok = got.is_some();
                if ok {
                    bump(&count);
                }
                drop(got);
                ok
            })
        };
        let g = hooks::lock_as(&core, epoch, 0);
        bump(&count);
        let mut last = hooks::shut(g);
        // The second worker opens the group, unowned (its late owner's),
        // locks it and closes it, giving up what its close gives up; then
        // once more.
        for round in 0..2 {
            assert_eq!(hooks::open_owned(&core, NEXT), last);
            assert!(
                !hooks::owned_and_unlocked(&core).0,
                "round {round}: the late owner's group is owned by nobody else"
            );
            let g = hooks::lock_as(&core, last, NEXT);
            bump(&count);
            assert_ne!(
                hooks::biased(&g),
                Some(false),
                "the lock is held through the bias, and the bias says nobody is in"
            );
            if round == 1 {
                drop(g);
                break;
            }
            last = hooks::shut(g);
            hooks::give_up(&core, NEXT);
        }
        let after = last;
        let late_held = late.join().unwrap();
        assert_eq!(
            count.load(Ordering::Relaxed),
            3 + usize::from(late_held),
            "two threads held the lock at once"
        );
        assert_eq!(core.epoch(), Some(after), "the epoch went back");
    });
}

/// The race a review found: a thread locks the group under the epoch it
/// is about to be opened under (a guessed handle, or one passed on without
/// ordering) while the opener opens it owned and takes the bias. The
/// lock is decided on one load of the state (not open yet: refused; open
/// and owned: revoke first), so the two never hold it at once. Without
/// that, the late thread's compare-and-swap succeeded beside the owner.
#[test]
fn an_owned_lock_racing_the_open_is_exclusive() {
    use crate::sched::group::loom_hooks as hooks;
    use crate::sched::group::GroupCore;
    const OWNER: usize = 0x1000;
    model(2, || {
        let core = Arc::new(GroupCore::new());
        let count = Arc::new(AtomicUsize::new(0));
        let other = {
            let (core, count) = (core.clone(), count.clone());
            thread::spawn(move || {
                let got = hooks::try_lock_as(&core, 1, 0);
                let ok = got.is_some();
                if ok {
                    bump(&count);
                }
                drop(got);
                ok
            })
        };
        let epoch = hooks::open_owned(&core, OWNER);
        assert_eq!(epoch, 1);
        let g = hooks::lock_as(&core, epoch, OWNER);
        bump(&count);
        drop(g);
        let ok = other.join().unwrap();
        assert_eq!(
            count.load(Ordering::Relaxed),
            1 + usize::from(ok),
            "two threads held the lock at once"
        );
    });
}
