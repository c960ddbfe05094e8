//! Latches: one-shot signals that a job (or a group of jobs) is done.
//!
//! ## Memory ordering
//! Setting a latch is a Release operation and probing it an Acquire one, so
//! everything the job wrote (its result) is visible to the thread that sees
//! the latch set. A worker that waits on a [`WorkerLatch`] may park; the setter
//! then wakes it (see `sleep.rs` and `README.md` beside this file).

// `set_ns` and `typical_ns` of `LockLatch` are measurements, not part of
// the protocol loom models: std's atomics always.
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::registry::Registry;
use super::sync::{AtomicU8, Condvar, Mutex, Ordering};
use super::worker::WorkerThread;

/// Something a job sets when it is done.
pub(crate) trait Latch {
    /// Sets the latch.
    ///
    /// # Safety
    /// `this` may be freed by the waiting thread as soon as the latch is
    /// observed set: implementations must not touch `*this` after the store
    /// that makes it observable.
    unsafe fn set(this: *const Self);
}

const UNSET: u8 = 0;
const SLEEPING: u8 = 1;
const SET: u8 = 2;

/// The state machine of a [`WorkerLatch`], UNSET → SLEEPING → SET (see
/// `README.md` beside this file, "Latches"), apart from the owner it wakes,
/// so that loom can check it with the sleep protocol (`sleep/loom.rs`).
///
/// ## Memory ordering
/// [`set`](Self::set) is a SeqCst swap and [`probe`](Self::probe) an
/// Acquire load: the job's writes (its result) happen before a probe that
/// sees SET. The owner's UNSET → SLEEPING is a SeqCst compare-exchange made
/// after it registered as a sleeper: either the setter's swap sees
/// SLEEPING and wakes the owner, or the owner's exchange fails and it does
/// not park.
pub(crate) struct LatchState(AtomicU8);

impl LatchState {
    /// An unset latch.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        LatchState(AtomicU8::new(UNSET))
    }

    /// Whether the latch is set (Acquire: the job's writes are visible).
    #[inline]
    pub(crate) fn probe(&self) -> bool {
        self.0.load(Ordering::Acquire) == SET
    }

    /// The owner is about to park: UNSET → SLEEPING. Returns false when the
    /// latch was set meanwhile (then the owner must not park).
    pub(crate) fn get_sleepy(&self) -> bool {
        self.0
            .compare_exchange(UNSET, SLEEPING, Ordering::SeqCst, Ordering::Acquire)
            .is_ok()
    }

    /// The owner decided not to park after all, or woke: SLEEPING → UNSET
    /// (a no-op if the latch was set meanwhile).
    pub(crate) fn wake_up(&self) {
        let _ = self
            .0
            .compare_exchange(SLEEPING, UNSET, Ordering::SeqCst, Ordering::Relaxed);
    }

    /// Sets the latch; returns whether its owner was asleep (then the
    /// setter must wake it).
    pub(crate) fn set(&self) -> bool {
        self.0.swap(SET, Ordering::SeqCst) == SLEEPING
    }
}

/// A latch waited on by a worker thread, which keeps working (stealing)
/// while it waits and may park; setting it wakes that worker.
pub(crate) struct WorkerLatch {
    state: LatchState,
    /// The worker that waits; alive while the latch is unset, since it
    /// waits for it on its own thread.
    owner: *const WorkerThread,
    /// The setter may not be a worker of the owner's registry (cross-pool
    /// install): it must then hold the registry alive while it wakes the
    /// owner.
    cross: bool,
}

// SAFETY: `owner` is only dereferenced by `set` while the latch is unset
// (the owner is alive, waiting), and its registry is kept alive across the
// wake-up (see `set`); the state is atomic.
unsafe impl Sync for WorkerLatch {}
// SAFETY: as above.
unsafe impl Send for WorkerLatch {}

impl WorkerLatch {
    /// A latch waited on by worker `owner`; `cross` when it may be set by a
    /// thread that is not a worker of `owner`'s pool.
    #[inline(always)]
    pub(crate) fn new(owner: &WorkerThread, cross: bool) -> Self {
        WorkerLatch {
            state: LatchState::new(),
            owner,
            cross,
        }
    }

    /// Whether the latch is set (see [`LatchState::probe`]).
    #[inline]
    pub(crate) fn probe(&self) -> bool {
        self.state.probe()
    }

    /// See [`LatchState::get_sleepy`].
    pub(crate) fn get_sleepy(&self) -> bool {
        self.state.get_sleepy()
    }

    /// See [`LatchState::wake_up`].
    pub(crate) fn wake_up(&self) {
        self.state.wake_up()
    }
}

impl Latch for WorkerLatch {
    unsafe fn set(this: *const Self) {
        // SAFETY: `this`, and the owner waiting for it, are alive until the
        // swap below makes SET observable; we copy what we need first.
        let (registry, owner, cross) = unsafe {
            let owner = &*(*this).owner;
            (Arc::as_ptr(owner.registry()), owner.index(), (*this).cross)
        };
        // Keep the owner's registry alive across the wake-up when the setter
        // does not belong to it (a worker of `registry` holds its own Arc).
        let _guard = if cross {
            // SAFETY: the owner is blocked until SET, and it holds an Arc to
            // `registry`, so the registry is alive to be cloned here.
            unsafe {
                Arc::increment_strong_count(registry);
                Some(Arc::from_raw(registry))
            }
        } else {
            None
        };
        // SAFETY: alive until this swap; after it we touch `*this` no more.
        if unsafe { (*this).state.set() } {
            // SAFETY: the registry is alive: either we are one of its workers
            // (holding an Arc) or `_guard` holds one.
            unsafe { (*registry).sleep.wake_specific(owner) };
        }
    }
}

/// A latch for threads outside any pool: the waiter may spin for a while
/// ([`wait_and_reset_adaptive`](Self::wait_and_reset_adaptive): most jobs
/// handed to a pool from outside are short, and a thread that blocks
/// takes longer to wake than such a job takes to run), then blocks on a
/// mutex and a condition variable.
///
/// ## Memory ordering
/// The state is UNSET → SET, or UNSET → SLEEPING → SET when the waiter
/// blocks. [`set`](Latch::set) swaps in SET (AcqRel: the job's writes
/// happen before a waiter that sees SET reads its result); if it took
/// SLEEPING, it then sets `done` and notifies under the mutex, and the
/// waiter, which compared-and-exchanged UNSET → SLEEPING while holding
/// that mutex, returns only once it holds the mutex again and sees
/// `done`: after the setter's last touch. If the setter took UNSET, the
/// swap was its last touch, and the waiter's exchange fails (it sees SET)
/// without blocking. `set_ns` is written before the swap and read after
/// the waiter saw SET.
pub(crate) struct LockLatch {
    state: AtomicU8,
    /// When the setter set the latch (`record::now_ns`).
    set_ns: AtomicU64,
    /// The waiter's estimate of how long its waits last, in ns: a running
    /// mean (new wait 1/4, history 3/4). Touched by the waiter alone.
    typical_ns: AtomicU64,
    done: Mutex<bool>,
    cv: Condvar,
}

impl Default for LockLatch {
    fn default() -> Self {
        LockLatch {
            state: AtomicU8::new(UNSET),
            set_ns: AtomicU64::new(0),
            typical_ns: AtomicU64::new(0),
            done: Mutex::new(false),
            cv: Condvar::new(),
        }
    }
}

/// How long a [`LockLatch`]'s waiter spins at most before it blocks:
/// about twice what a block and wake-up cost on the 2-vCPU test machine
/// (a one-worker `install` of a 1,023-node tree sum took 14-15 µs in its
/// best tenth of calls with a waiter that blocked at once, 3 µs of it the
/// work), so that a short wait costs at most about twice the best choice.
const LOCK_SPIN: Duration = Duration::from_micros(25);

/// How long to spin for a job when the waiter's recent jobs took
/// `typical_ns` ([`LockLatch::wait_and_reset_adaptive`]).
fn spin_for(typical_ns: u64, spare_cpus: bool) -> Duration {
    if spare_cpus || typical_ns < LOCK_SPIN.as_nanos() as u64 {
        LOCK_SPIN
    } else {
        Duration::ZERO
    }
}

/// The waiter's estimate after a job that took `took_ns`: a running mean,
/// the new job weighing 1/4. Each job counts as at most twice
/// [`LOCK_SPIN`], so that one job slowed by the machine (its worker
/// descheduled, say) moves the estimate by a few microseconds only.
fn next_typical(typical_ns: u64, took_ns: u64) -> u64 {
    let took = took_ns.min(2 * LOCK_SPIN.as_nanos() as u64);
    typical_ns - typical_ns / 4 + took / 4
}

impl LockLatch {
    /// Waits until set (one look, then blocking), then resets the latch
    /// for reuse.
    pub(crate) fn wait_and_reset(&self) {
        if !self.spin(Duration::ZERO) {
            self.block();
        }
        self.state.store(UNSET, Ordering::Relaxed);
    }

    /// [`wait_and_reset`](Self::wait_and_reset) for a job handed over at
    /// `start_ns` (`record::now_ns`), spinning first for up to
    /// [`LOCK_SPIN`] when the waiter's recent jobs took less than that, or
    /// when `spare_cpus` (the pool has fewer workers than the process has
    /// CPUs, so the spinning thread takes no CPU from a worker).
    ///
    /// A spinning waiter holds a CPU: on 2 CPUs with 2 workers it kept the
    /// second worker off one for the length of the spin, so a job of 25 to
    /// 100 µs took 15-35 µs longer than with a waiter that blocked at once
    /// (`install` of tree sums of 2^14 and 2^16 nodes, 2026-12-03), while
    /// a job of a few µs took 3-4 µs instead of 30 (the blocked waiter's
    /// wake-up). The jobs' own lengths (from the hand-over to the set, so
    /// not counting the waiter's wake-up) decide: spin for short ones,
    /// block at once for long ones.
    pub(crate) fn wait_and_reset_adaptive(&self, start_ns: u64, spare_cpus: bool) {
        let typical = self.typical_ns.load(Ordering::Relaxed);
        if !self.spin(spin_for(typical, spare_cpus)) {
            self.block();
        }
        let took = self.set_ns.load(Ordering::Relaxed).saturating_sub(start_ns);
        self.typical_ns
            .store(next_typical(typical, took), Ordering::Relaxed);
        self.state.store(UNSET, Ordering::Relaxed);
    }

    /// Looks at the latch for up to `spin_for` (at least once); whether
    /// it was set.
    fn spin(&self, spin_for: Duration) -> bool {
        // Under Miri and loom a look is enough (and time is slow).
        if cfg!(any(miri, loom)) || spin_for.is_zero() {
            return self.state.load(Ordering::Acquire) == SET;
        }
        let start = Instant::now();
        loop {
            for _ in 0..64 {
                if self.state.load(Ordering::Acquire) == SET {
                    return true;
                }
                std::hint::spin_loop();
            }
            if start.elapsed() >= spin_for {
                return self.state.load(Ordering::Acquire) == SET;
            }
        }
    }

    /// Blocks until set.
    fn block(&self) {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        // Under the mutex: a setter that sees SLEEPING then waits for it
        // to set `done`.
        if self
            .state
            .compare_exchange(UNSET, SLEEPING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // SET: that setter's swap was its last touch.
            return;
        }
        while !*done {
            done = self.cv.wait(done).unwrap_or_else(|e| e.into_inner());
        }
        *done = false;
    }
}

impl Latch for LockLatch {
    unsafe fn set(this: *const Self) {
        // SAFETY: alive until the swap makes SET observable (and, if the
        // waiter blocks, until it re-acquires the mutex after we set
        // `done`: see the type's docs).
        let this = unsafe { &*this };
        this.set_ns
            .store(crate::sched::record::now_ns(), Ordering::Relaxed);
        if this.state.swap(SET, Ordering::AcqRel) == SLEEPING {
            let mut done = this.done.lock().unwrap_or_else(|e| e.into_inner());
            *done = true;
            this.cv.notify_all();
        }
    }
}

impl<L: Latch> Latch for &L {
    unsafe fn set(this: *const Self) {
        // SAFETY: forwarded; `*this` is a live reference to a live latch.
        unsafe { L::set(*this) }
    }
}

/// Counts outstanding jobs of a scope (or of a broadcast); when the count
/// reaches zero the inner latch is set.
pub(crate) struct CountLatch {
    counter: AtomicUsize,
    kind: CountLatchKind,
}

enum CountLatchKind {
    /// Waited on by a worker, which keeps stealing.
    Stealing(WorkerLatch),
    /// Waited on by a thread outside every pool.
    Blocking(LockLatch),
}

impl CountLatch {
    /// A latch at 1 (a scope's own body) for jobs of `registry`'s pool,
    /// waited on by `owner`, the waiting thread's worker if it is one (of
    /// any pool: a worker of another pool is set by threads that are not
    /// its pool's, see [`WorkerLatch::new`]).
    pub(crate) fn new(registry: &Arc<Registry>, owner: Option<&WorkerThread>) -> Self {
        Self::with_count(1, registry, owner)
    }

    /// As [`new`](Self::new), at `count`.
    pub(crate) fn with_count(
        count: usize,
        registry: &Arc<Registry>,
        owner: Option<&WorkerThread>,
    ) -> Self {
        let kind = match owner {
            Some(wt) => {
                let cross = !Arc::ptr_eq(wt.registry(), registry);
                CountLatchKind::Stealing(WorkerLatch::new(wt, cross))
            }
            None => CountLatchKind::Blocking(LockLatch::default()),
        };
        CountLatch {
            counter: AtomicUsize::new(count),
            kind,
        }
    }

    /// One more job to wait for. Relaxed: the increment happens before the
    /// job is published (by a Release push), and only that job decrements.
    pub(crate) fn increment(&self) {
        let old = self.counter.fetch_add(1, Ordering::Relaxed);
        debug_assert!(old != 0, "count latch incremented after reaching zero");
    }

    /// Waits until the count reaches zero: `owner` (the worker given to
    /// [`new`](Self::new)) runs other work meanwhile, a thread outside
    /// every pool blocks.
    pub(crate) fn wait(&self, owner: Option<&WorkerThread>) {
        match (&self.kind, owner) {
            (CountLatchKind::Stealing(l), Some(wt)) => wt.wait_until(l),
            (CountLatchKind::Blocking(l), _) => l.wait_and_reset(),
            (CountLatchKind::Stealing(_), None) => unreachable!("stealing latch without owner"),
        }
    }
}

impl Latch for CountLatch {
    unsafe fn set(this: *const Self) {
        // SAFETY: alive until the inner latch is set (the waiter waits on it).
        // AcqRel: every job's writes happen before the final decrement, which
        // the inner latch publishes to the waiter.
        if unsafe { (*this).counter.fetch_sub(1, Ordering::AcqRel) } == 1 {
            // SAFETY: the inner latch lives inside `*this`, alive until set.
            let kind = unsafe { &(*this).kind };
            match kind {
                // SAFETY: a live latch, set once (the count reached zero once).
                CountLatchKind::Stealing(l) => unsafe { WorkerLatch::set(l) },
                // SAFETY: as above.
                CountLatchKind::Blocking(l) => unsafe { LockLatch::set(l) },
            }
        }
    }
}

/// The latches that need no worker, with plain threads: no system call,
/// so under Miri too (`scripts/miri.sh`), which checks that a job's result
/// reaches the waiter through the latch (its data-race detector) and that
/// a setter does not touch a latch its waiter may already have freed.
/// [`WorkerLatch`] needs a worker and its registry: its state machine is
/// [`LatchState`], tested here, and loom models it with the sleep protocol.
#[cfg(test)]
mod tests {
    use std::cell::UnsafeCell;
    use std::thread;

    use super::*;

    /// A value written without atomics before a latch is set and read
    /// after it is seen set: a data race unless the latch orders them.
    struct Slot(UnsafeCell<u64>);
    // SAFETY: the tests order every access through a latch.
    unsafe impl Sync for Slot {}

    impl Slot {
        fn new() -> Slot {
            Slot(UnsafeCell::new(0))
        }
        fn ptr(&self) -> *mut u64 {
            self.0.get()
        }
    }

    /// A latch's address, for a setter thread that outlives the latch.
    struct Shared<T>(*const T);
    // SAFETY: the latches pointed to are Sync; the tests keep them alive
    // until they are set.
    unsafe impl<T: Sync> Send for Shared<T> {}
    impl<T> Shared<T> {
        fn get(&self) -> *const T {
            self.0
        }
    }

    const ROUNDS: usize = if cfg!(miri) { 8 } else { 500 };

    #[test]
    fn latch_state_hands_over_with_a_sleeping_owner() {
        for round in 0..ROUNDS {
            let state = LatchState::new();
            let slot = Slot::new();
            thread::scope(|s| {
                let owner = s.spawn(|| {
                    while !state.probe() {
                        if state.get_sleepy() {
                            // Spurious wake-ups allowed: the loop rechecks.
                            thread::park();
                            state.wake_up();
                        }
                    }
                    // SAFETY: written before the SET we saw (Acquire).
                    unsafe { *slot.ptr() }
                });
                let owner_thread = owner.thread().clone();
                // SAFETY: the owner reads only after it sees SET.
                unsafe { *slot.ptr() = round as u64 + 1 };
                if state.set() {
                    owner_thread.unpark();
                }
                assert_eq!(owner.join().unwrap(), round as u64 + 1);
            });
            assert!(state.probe());
            // Set is final: neither the owner's moves nor a second set undo it.
            assert!(!state.get_sleepy());
            state.wake_up();
            assert!(!state.set());
            assert!(state.probe());
        }
    }

    #[test]
    fn latch_state_transitions() {
        let state = LatchState::new();
        assert!(!state.probe());
        assert!(state.get_sleepy());
        // SLEEPING: a setter must wake the owner.
        assert!(!state.probe());
        state.wake_up();
        assert!(state.get_sleepy());
        assert!(state.set(), "set on a sleeping owner reports it");
        assert!(state.probe());
        let state = LatchState::new();
        assert!(!state.set(), "set on an awake owner needs no wake-up");
        assert!(!state.get_sleepy(), "an owner must not park on a set latch");
    }

    #[test]
    fn lock_latch_is_freed_by_its_waiter_right_after_set() {
        for round in 0..ROUNDS {
            // The waiter frees the latch the moment it returns, while the
            // setter may still be in `set`: a setter that touched the latch
            // after the waiter can see it set would be a use after free.
            let latch: *const LockLatch = Box::into_raw(Box::default());
            let slot = Slot::new();
            thread::scope(|s| {
                let (shared, slot) = (Shared(latch), &slot);
                s.spawn(move || {
                    // SAFETY: the waiter reads only after the latch is set.
                    unsafe { *slot.ptr() = round as u64 };
                    // SAFETY: the latch is alive until it is set.
                    unsafe { LockLatch::set(shared.get()) };
                });
                // SAFETY: from `Box::into_raw` above, freed only below.
                unsafe { (*latch).wait_and_reset() };
                // SAFETY: set; the setter no longer touches it.
                drop(unsafe { Box::from_raw(latch.cast_mut()) });
                // SAFETY: written before the set we waited for.
                assert_eq!(unsafe { *slot.ptr() }, round as u64);
            });
        }
    }

    /// A setter slower than the waiter's spin: the waiter blocks, and
    /// wakes with the job's write visible; the latch is then reusable, for
    /// a wait that ends in the spin as for one that blocks again (spinning
    /// always, as for a pool with CPUs to spare).
    #[test]
    fn lock_latch_blocks_after_its_spin_and_is_reusable() {
        let latch = LockLatch::default();
        let slot = Slot::new();
        for (round, delay_us) in [(1u64, 2_000u64), (2, 0), (3, 2_000), (4, 0)] {
            thread::scope(|s| {
                s.spawn(|| {
                    thread::sleep(Duration::from_micros(delay_us));
                    // SAFETY: the waiter reads only after the latch is set.
                    unsafe { *slot.ptr() = round };
                    // SAFETY: alive (borrowed by the scope).
                    unsafe { LockLatch::set(&latch) };
                });
                latch.wait_and_reset_adaptive(crate::sched::record::now_ns(), true);
                // SAFETY: written before the set we waited for.
                assert_eq!(unsafe { *slot.ptr() }, round);
            });
            assert_eq!(latch.state.load(Ordering::Relaxed), UNSET, "reset");
            assert!(!*latch.done.lock().unwrap(), "round {round}: done reset");
        }
    }

    /// Spin for short jobs, not for long ones, always with CPUs to spare;
    /// the estimate follows the jobs, and one slow job moves it little.
    #[test]
    fn lock_latch_spins_for_short_jobs_only() {
        let us = |n: u64| n * 1_000;
        assert_eq!(spin_for(0, false), LOCK_SPIN, "no history: spin");
        assert_eq!(spin_for(us(10), false), LOCK_SPIN);
        assert_eq!(spin_for(us(30), false), Duration::ZERO);
        assert_eq!(spin_for(us(30), true), LOCK_SPIN, "CPUs to spare");
        // Jobs of 100 µs: the estimate passes the spin within 4 jobs and
        // stays below twice it.
        let mut t = 0;
        let mut jobs = 0;
        while spin_for(t, false) == LOCK_SPIN {
            t = next_typical(t, us(100));
            jobs += 1;
        }
        assert!(
            jobs <= 4,
            "{jobs} long jobs before the waiter stopped spinning"
        );
        for _ in 0..100 {
            t = next_typical(t, us(100));
        }
        assert!(t <= us(50), "{t}");
        // Jobs of 3 µs bring the spin back within 4 jobs.
        let mut jobs = 0;
        while spin_for(t, false) != LOCK_SPIN {
            t = next_typical(t, us(3));
            jobs += 1;
        }
        assert!(jobs <= 4, "{jobs} short jobs before the waiter spun again");
        // Settled at 3 µs, one job of 10 ms leaves it spinning.
        for _ in 0..100 {
            t = next_typical(t, us(3));
        }
        assert_eq!(spin_for(next_typical(t, us(10_000)), false), LOCK_SPIN);
    }

    #[test]
    fn count_latch_waits_for_every_job() {
        let jobs = if cfg!(miri) { 4 } else { 16 };
        for _ in 0..ROUNDS / 2 {
            // Freed by the waiter as soon as the count reaches zero (see
            // the test above).
            let latch: *const CountLatch = Box::into_raw(Box::new(CountLatch {
                counter: AtomicUsize::new(1),
                kind: CountLatchKind::Blocking(LockLatch::default()),
            }));
            let slots: Vec<Slot> = (0..jobs).map(|_| Slot::new()).collect();
            thread::scope(|s| {
                for (i, slot) in slots.iter().enumerate() {
                    // SAFETY: alive until the count reaches zero, below.
                    unsafe { (*latch).increment() };
                    let shared = Shared(latch);
                    s.spawn(move || {
                        // SAFETY: read only after the count reaches zero.
                        unsafe { *slot.ptr() = i as u64 + 1 };
                        // SAFETY: alive until the count reaches zero.
                        unsafe { CountLatch::set(shared.get()) };
                    });
                }
                // The scope's own body.
                // SAFETY: as above.
                unsafe { CountLatch::set(latch) };
                // SAFETY: as above.
                unsafe { (*latch).wait(None) };
                // SAFETY: the count is zero: no job touches it any more.
                let latch = unsafe { Box::from_raw(latch.cast_mut()) };
                assert_eq!(latch.counter.load(Ordering::Relaxed), 0);
                drop(latch);
                for (i, slot) in slots.iter().enumerate() {
                    // SAFETY: every job set the latch after its write.
                    assert_eq!(unsafe { *slot.ptr() }, i as u64 + 1);
                }
            });
        }
    }

    #[test]
    fn stack_job_result_reaches_its_owner_through_the_latch() {
        use crate::sched::job::StackJob;
        for round in 0..ROUNDS {
            let job = StackJob::new(
                move |stolen: bool| {
                    assert!(stolen);
                    vec![round; 3]
                },
                LockLatch::default(),
            );
            let job_ref = job.as_job_ref();
            // SAFETY: executed once; `job` stays in place until its latch
            // is set.
            let thief = thread::spawn(move || unsafe { job_ref.execute() });
            job.latch.wait_and_reset();
            // Moved (its frame reused) while the thief may still be
            // returning from `execute`.
            assert_eq!(job.into_result(), vec![round; 3]);
            thief.join().unwrap();
        }
    }
}
