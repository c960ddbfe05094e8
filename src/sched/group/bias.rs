//! Owner bias: how the worker that opened a group takes the group's lock
//! with plain stores, and how any other thread makes it stop.
//!
//! A group that a worker opens for its own pool (`GroupCore::open_here`,
//! the C API's `terroir_group_create(NULL, ..)` in a task) is, as a rule,
//! used by that worker alone: it spawns into it, waits for it and closes
//! it, and the group's tasks reach it through their batch, not its lock.
//! The lock is a compare-and-swap on the state word (`core.rs`), about 3
//! ns on the test machine, taken several times per group; an empty group
//! took one for its close, most of the 5 ns libgomp's empty `taskwait`
//! costs altogether. So such a group is opened *owned* (the state's
//! `OWNED` flag), and while it is, its owner locks it by announcing
//! itself instead:
//!
//! ```text
//! owner (enter)                      another thread (revoke, once)
//!   owner_in = true                    revoked = max(revoked, epoch)
//!   compiler fence                     membarrier(PRIVATE_EXPEDITED)
//!   if revoked >= epoch:               while owner_in: wait
//!     owner_in = false,
//!     take the CAS lock instead        take the CAS lock (clears OWNED)
//!   ... (the lock is held) ...
//! (leave) owner_in = false
//! ```
//!
//! The owner's side has no fence and no read-modify-write: the other side
//! pays for both with `membarrier(2)`, which runs a full barrier on every
//! running thread of the process (the asymmetric Dekker pattern; folly's
//! `asymmetricHeavyBarrier` and liburcu use it the same way). Either the
//! owner's load sees `revoked` (and it backs out), or the other thread's
//! load sees `owner_in` (and it waits for the owner to leave): both cannot
//! miss each other. Once `revoked` names the epoch, the owner never
//! enters again in it, and the first compare-and-swap lock clears `OWNED`: from
//! then on every thread takes the compare-and-swap lock, as for a group
//! that was never owned. A revoke costs a system call (microseconds), once
//! per group that another thread touches.
//!
//! ## Stale threads
//!
//! An operation decides on one load of the state (open under its epoch
//! and `OWNED`) and one of `owned_by` (the caller is the owner) before it
//! enters, and may be preempted in between. Meanwhile another thread may
//! revoke, lock and close the group (a `terroir_group_destroy` from
//! another thread racing the owner's use of the handle: a caller's bug,
//! which must still end in `CoreError::Dead`, not in two threads in the
//! lock), and the slot may be opened again. Two rules make the late
//! owner harmless (a review found the race: two threads in the lock, an
//! epoch going backwards, a slot in two free lists):
//!
//! - `revoked` holds the revoked *epoch*, kept monotonic (`fetch_max`):
//!   the late owner's `enter(e)` sees the revoke of `e`, whatever was
//!   opened since, and backs out to the compare-and-swap lock, which
//!   finds `e` dead. (A flag reset by the next open let it in.)
//! - `owner_in` is shared by the owners of all epochs, so a late owner's
//!   store and back-out must not land while another worker owns a later
//!   epoch (its back-out would clear that worker's `owner_in`, and a
//!   revoke would walk in beside it). So `owned_by` is cleared only by
//!   the owner's own thread once the group is closed
//!   (`GroupCore::give_up`: no owner check is carried across anything
//!   that could run that close, so the owner is not between a check and
//!   its bias then), and the group opens owned
//!   only for the worker in `owned_by`, or when it is cleared: after
//!   another thread's close, the slot is owned again only by its last
//!   owner. Such a slot costs its other users the compare-and-swap lock,
//!   as if `membarrier` were missing, until that worker opens it again
//!   (for good if that worker has exited, unless a later worker's state
//!   lands at the same address).
//!
//! loom: `a_late_owner_neither_enters_nor_clears_a_later_owners_bias`.
//!
//! Where the kernel has no `membarrier` (or a sandbox forbids it, or
//! allows the registration but not the barrier: the first use tries
//! both), and under Miri, groups are never opened owned ([`enabled`]). loom checks
//! the protocol with SeqCst fences on both sides (`sleep/loom.rs`,
//! `an_owned_group_is_locked_by_one_thread_at_a_time`).
//!
//! ## Memory ordering
//! `leave` is a Release store of `owner_in`, and `revoke` waits with
//! Acquire loads: what the owner wrote under the lock happens before what
//! the revoking thread does once it saw `owner_in` false. The owner's
//! `enter` needs no Acquire: it reads nothing another thread wrote under
//! the lock (no other thread takes it while the group is owned), and when
//! it backs out it takes the compare-and-swap lock, which orders the rest.

use std::sync::atomic::AtomicU8;

use crate::sched::sync::{AtomicBool, AtomicU32, Ordering};

/// The two flags of the protocol, in a group.
pub(super) struct Bias {
    /// Set by the owner while it holds the lock through the bias.
    owner_in: AtomicBool,
    /// The latest epoch another thread revoked (0: none; epochs start at
    /// 1 and only go forward, `core.rs`). An epoch, not a flag: a revoke
    /// of one epoch must stop that epoch's owner, also when it comes
    /// late (see "Stale threads" in the module docs), and must not stop
    /// a later epoch's owner, so the open has nothing to reset.
    revoked: AtomicU32,
}

impl Bias {
    pub(super) fn new() -> Bias {
        Bias {
            owner_in: AtomicBool::new(false),
            revoked: AtomicU32::new(0),
        }
    }

    /// The owner of `epoch` takes the lock: true when it holds it (then it
    /// must [`leave`](Self::leave)), false when another thread revoked the
    /// bias of `epoch` (then it takes the compare-and-swap lock, which
    /// finds out whether `epoch` is still open).
    #[inline(always)]
    pub(super) fn enter(&self, epoch: u32) -> bool {
        self.owner_in.store(true, Ordering::Relaxed);
        light_barrier();
        if self.revoked.load(Ordering::Relaxed) >= epoch {
            self.owner_in.store(false, Ordering::Release);
            return false;
        }
        true
    }

    /// Whether an owner is in (for loom's models).
    #[cfg(all(loom, test))]
    pub(super) fn owner_is_in(&self) -> bool {
        self.owner_in.load(Ordering::Relaxed)
    }

    /// Whether the bias of `epoch` is revoked (for tests).
    #[cfg(test)]
    pub(super) fn is_revoked(&self, epoch: u32) -> bool {
        self.revoked.load(Ordering::Relaxed) >= epoch
    }

    /// The owner lets go of the lock taken by [`enter`](Self::enter).
    #[inline(always)]
    pub(super) fn leave(&self) {
        self.owner_in.store(false, Ordering::Release);
    }

    /// Another thread, before it takes the compare-and-swap lock of a
    /// group it saw open owned under `epoch`: stops that epoch's owner
    /// from entering, and waits until it is out.
    #[cold]
    #[inline(never)]
    pub(super) fn revoke(&self, epoch: u32) {
        // A read-modify-write: racing revokes of different epochs (one of
        // them stale) leave the latest.
        self.revoked.fetch_max(epoch, Ordering::Relaxed);
        heavy_barrier();
        // The owner holds the lock for a few field updates, never across a
        // task or a wait: this waits for those, or for the owner's thread
        // to be scheduled again.
        let mut spins = 0u32;
        while self.owner_in.load(Ordering::Acquire) {
            spins = spins.saturating_add(1);
            if cfg!(loom) || spins >= 64 {
                crate::sched::sync::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// The owner's side of the barrier pair: keeps the compiler from moving
/// the load of `revoked` above the store of `owner_in`; the processor may
/// still, and [`heavy_barrier`] is what orders them.
#[inline(always)]
fn light_barrier() {
    #[cfg(loom)]
    crate::sched::sync::fence(Ordering::SeqCst);
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// The revoking side: a full barrier on every running thread of the
/// process (`membarrier`), and on this one.
fn heavy_barrier() {
    crate::sched::sync::fence(Ordering::SeqCst);
    #[cfg(not(loom))]
    {
        // Registered, and the command worked once ([`register`]); the
        // kernel may still fail it for a moment (ENOMEM: it allocates a
        // CPU mask on some configurations), so it is tried again.
        let mut tries = 0u32;
        while let Err(e) = crate::numa::sys::membarrier() {
            tries += 1;
            if tries == 1000 {
                // Without the barrier the owner's lock would not exclude
                // this thread: going on is not an option.
                crate::sched::unwind::abort_with(&format!(
                    "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed {tries} times in a row \
                     after it had worked: {e}"
                ));
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
    crate::sched::sync::fence(Ordering::SeqCst);
}

/// Whether groups may be opened owned: once per process, registers for
/// `membarrier`'s private expedited barrier; false where that fails (an
/// old kernel, a sandbox, Miri), or under loom (whose models use [`Bias`]
/// directly).
#[inline]
pub(super) fn enabled() -> bool {
    match STATE.load(std::sync::atomic::Ordering::Acquire) {
        YES => true,
        NO => false,
        _ => register(),
    }
}

const UNKNOWN: u8 = 0;
const YES: u8 = 1;
const NO: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// The first [`enabled`]: registers, runs the barrier once (a sandbox may
/// allow the registration and refuse the command), and remembers the
/// answer.
#[cold]
#[inline(never)]
fn register() -> bool {
    let ok = !cfg!(loom)
        && crate::numa::sys::membarrier_register().is_ok()
        && crate::numa::sys::membarrier().is_ok();
    // Registering twice is harmless: racing first calls agree.
    STATE.store(
        if ok { YES } else { NO },
        std::sync::atomic::Ordering::Release,
    );
    ok
}

/// The bias with real threads, pools and `membarrier`: the owner's path
/// (no compare-and-swap while nobody else touches the group), and every
/// way another thread comes in (a spawn from outside the pool, a wait and
/// a close from another worker), after which the group is no longer owned
/// and everything still works.
#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc};

    use super::super::core::{GroupCore, OWNED};
    use super::super::warm::Closed;
    use crate::sched::worker::WorkerThread;

    use crate::sched::test_pool as pool;

    fn owned(core: &GroupCore) -> bool {
        core.state.load(Ordering::Relaxed) & OWNED != 0
    }

    /// A group the calling worker opens for its own pool, leaked (as the C
    /// API's table slots are): `(core, epoch)`.
    fn open_here() -> (&'static GroupCore, u32) {
        let core: &'static GroupCore = Box::leak(Box::new(GroupCore::new()));
        // SAFETY: a new group, opened by this thread alone.
        let epoch = unsafe { core.open_here(None, None) }.expect("a worker opens a group here");
        (core, epoch)
    }

    #[test]
    fn the_owner_spawns_waits_and_closes_through_its_bias() {
        assert!(
            super::enabled(),
            "membarrier registration (this machine has it)"
        );
        let ran = Arc::new(AtomicUsize::new(0));
        let ran2 = Arc::clone(&ran);
        pool(2).install(move || {
            for round in 0..100 {
                let (core, epoch) = open_here();
                assert!(owned(core), "opened owned");
                for _ in 0..4 {
                    let ran = Arc::clone(&ran2);
                    let spawned = core.spawn_here(epoch, move |_| {
                        ran.fetch_add(1, Ordering::Relaxed);
                    });
                    assert!(spawned.is_ok(), "round {round}: the owner's spawn");
                }
                assert!(owned(core), "still owned after the spawns");
                core.wait(epoch).expect("the owner's wait");
                // The group's tasks ran (on either worker) without taking
                // its lock: still owned.
                assert!(owned(core), "still owned after the wait");
                assert_eq!(
                    core.close_idle_owned(epoch),
                    Some(Closed::Free),
                    "the biased close"
                );
                assert_eq!(core.epoch(), None, "closed");
            }
        });
        assert_eq!(ran.load(Ordering::Relaxed), 400);
    }

    #[test]
    fn another_thread_revokes_and_the_group_goes_on() {
        let pool = pool(2);
        let ran = Arc::new(AtomicUsize::new(0));
        for round in 0..50 {
            let (tx, rx) = mpsc::channel();
            let ran1 = Arc::clone(&ran);
            let (core, epoch) = pool.install(move || {
                let (core, epoch) = open_here();
                let ran = Arc::clone(&ran1);
                assert!(core
                    .spawn_here(epoch, move |_| {
                        ran.fetch_add(1, Ordering::Relaxed);
                    })
                    .is_ok());
                (core, epoch)
            });
            // A thread outside the pool: a spawn (started at once).
            let ran2 = Arc::clone(&ran);
            std::thread::spawn(move || {
                core.spawn(epoch, None, false, move |_| {
                    ran2.fetch_add(1, Ordering::Relaxed);
                })
                .expect("a spawn from outside the pool");
                tx.send(()).unwrap();
            });
            rx.recv().unwrap();
            assert!(!owned(core), "round {round}: revoked by the outside spawn");
            // The owner worker (or the other one) waits and closes: the
            // compare-and-swap lock now.
            let closed = pool.install(move || {
                assert!(WorkerThread::current().is_some());
                core.wait(epoch).expect("a wait after the revoke");
                core.close(epoch).expect("a close after the revoke")
            });
            assert_eq!(closed, Closed::Free);
        }
        assert_eq!(ran.load(Ordering::Relaxed), 100);
    }

    /// A group owned by a worker, with a queued task, closed by a thread
    /// outside the pool: the close revokes the bias, runs the task (on
    /// the pool) and closes.
    #[test]
    fn a_close_from_outside_the_pool_revokes() {
        let pool = pool(2);
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..50 {
            let ran1 = Arc::clone(&ran);
            let (core, epoch) = pool.install(move || {
                let (core, epoch) = open_here();
                assert!(core
                    .spawn_here(epoch, move |_| {
                        ran1.fetch_add(1, Ordering::Relaxed);
                    })
                    .is_ok());
                (core, epoch)
            });
            let closed = std::thread::spawn(move || core.close(epoch).ok())
                .join()
                .unwrap();
            assert_eq!(closed, Some(Closed::Free));
            assert_eq!(core.epoch(), None);
            assert!(
                core.bias.is_revoked(epoch),
                "the close from outside revoked the bias"
            );
        }
        assert_eq!(ran.load(Ordering::Relaxed), 50);
    }

    /// A thread that locks the group under the epoch it is about to be
    /// opened under (a guessed handle: any value is accepted) while the
    /// owner opens, locks through its bias and closes, over and over: the
    /// state never shows `LOCKED`, or `OWNED` cleared, inside the owner's
    /// biased section, and the epochs only go forward. (A review's probe:
    /// before the lock decided on one load, this failed 5 runs in 6.)
    #[test]
    fn a_lock_racing_the_open_never_shares_the_owners_lock() {
        use super::super::core::{epoch_of, LIVE, LOCKED};
        use std::sync::atomic::AtomicBool;
        let core: &'static GroupCore = Box::leak(Box::new(GroupCore::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let racer = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut taken = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let s = core.state.load(Ordering::Relaxed);
                    if s & LIVE == 0 {
                        if let Ok(g) = core.lock(epoch_of(s)) {
                            taken += 1;
                            for _ in 0..200 {
                                std::hint::spin_loop();
                            }
                            drop(g);
                        }
                    }
                }
                taken
            })
        };
        let overlaps = pool(1).install(|| {
            let mut overlaps = 0usize;
            let mut last = 0u32;
            for _ in 0..50_000 {
                let (e, g) = {
                    // SAFETY: this thread alone opens the group.
                    let e = unsafe { core.open_here(None, None) }.expect("opens");
                    assert!(e > last, "epochs go forward ({last} then {e})");
                    last = e;
                    (e, core.lock(e).expect("open"))
                };
                if g.biased {
                    for _ in 0..50 {
                        let s = core.state.load(Ordering::Relaxed);
                        if s & LOCKED != 0 || s & OWNED == 0 {
                            overlaps += 1;
                            break;
                        }
                    }
                }
                drop(g);
                if core.close_idle_owned(e).is_none() {
                    core.close(e).expect("a close");
                }
            }
            overlaps
        });
        stop.store(true, Ordering::Relaxed);
        racer.join().unwrap();
        assert_eq!(
            overlaps, 0,
            "another thread held the lock inside the owner's"
        );
    }

    /// A task of an owned group, running in the group's batch, is no
    /// spawner for the owner's fast path (its spawns go to its batch,
    /// through `spawn`), even on the owner's thread.
    #[test]
    fn a_task_of_the_batch_does_not_take_the_owners_fast_path() {
        let declined = Arc::new(AtomicUsize::new(0));
        let d = Arc::clone(&declined);
        pool(1).install(move || {
            let (core, epoch) = open_here();
            let d = Arc::clone(&d);
            assert!(core
                .spawn_here(epoch, move |_| {
                    if core.spawn_here(epoch, |_| ()).is_err() {
                        d.fetch_add(1, Ordering::Relaxed);
                        // The general path finds the batch.
                        core.spawn(epoch, None, false, |_| ())
                            .expect("into the batch");
                    }
                })
                .is_ok());
            core.wait(epoch).expect("the wait");
            assert_eq!(core.close(epoch).ok(), Some(Closed::Free));
        });
        assert_eq!(declined.load(Ordering::Relaxed), 1);
    }
}
