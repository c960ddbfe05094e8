//! The state of one task group ([`GroupCore`]) and its protocol: open,
//! the lock, wait (its close is `close.rs`), and the slow paths behind
//! them (waiters that block or work, adopting the pool).
//!
//! # The state word and the lock
//!
//! A group is one `AtomicU64`, `epoch << 32 | flags`, and the fields it
//! guards. `LIVE` says the group is open under `epoch`; `LOCKED` is a
//! spin lock (taken with one compare-and-swap, released with a plain
//! store, held only for a few field updates, never across a task or a
//! wait); `BUSY` mirrors "not idle" so that a wait or a close of an idle
//! group reads or swaps one word; `OWNED` says that the worker that
//! opened the group for its own pool still takes the lock through its
//! bias, with plain stores (`bias.rs`), and every other thread revokes
//! the bias before its first compare-and-swap. Every operation names the epoch it
//! expects: after a close bumps the epoch, an old epoch finds the group
//! dead (`CoreError::Dead`), never another group's fields. That is all
//! the C API's handle table needs: a handle is a slot and an epoch.
//!
//! A group created by a worker for its own pool ([`GroupCore::open_here`],
//! the C API's `terroir_group_create(NULL, ..)` inside a task) does not
//! count a reference to the pool: the worker is alive, and so is its pool.
//! A thread other than that worker that uses the group *adopts* it first
//! (takes a reference and keeps the pool alive, unless the pool was
//! destroyed already: `CoreError::PoolGone`), and a worker exiting with
//! groups of its own that nobody adopted keeps its pool's memory (a leak
//! only in that case), so that a late user of such a group never reads
//! freed memory. An empty group created and closed by one worker thus
//! costs no atomic read-modify-write at all, and neither do that worker's
//! spawns and waits while no other thread touches the group; the worker
//! keeps the closed group for its next open (`warm.rs`).
//!
//! Where a spawn's task starts is `spawn.rs`.
//!
//! # Waiting
//!
//! A wait loops: run the queue as a batch (with the lock let go); when
//! the queue is empty, no other wait runs a batch and no task started
//! from outside is unfinished, return; when only such tasks remain, wait
//! for a change. A thread outside every pool blocks on the group's
//! condition variable; a worker (of any pool) never blocks: it runs other
//! work until a latch it listed in the group is set, since the task it
//! waits for may be placed on it. A wait from work stacked on top of the
//! group's own task or batch, on this thread or (through the batches the
//! caller's work runs in) on the workers that run them, is refused
//! (`walk.rs`), before the wait does anything: a refused wait runs none
//! of the group's tasks.

use std::any::Any;
use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::batch::Queued;
use super::bias::{self, Bias};
use super::pool_ref::release;
use super::warm::WarmKey;
use super::{TaskGroup, WouldDeadlock};
use crate::sched::latch::{Latch, WorkerLatch};
use crate::sched::place::PlaceError;
use crate::sched::registry::Registry;
use crate::sched::sync::{AtomicU64, AtomicUsize};
use crate::sched::worker::{WorkerInfo, WorkerThread};
use crate::ThreadPool;

pub(super) const LIVE: u64 = 1;
pub(super) const LOCKED: u64 = 2;
pub(super) const BUSY: u64 = 4;
/// Opened by a worker for its own pool, and no other thread has taken
/// the lock since: the owner locks it through its bias (`bias.rs`).
pub(super) const OWNED: u64 = 8;

/// A panic payload of a task, kept for the wait that reports it.
pub(crate) type Panic = Box<dyn Any + Send + 'static>;

#[inline]
pub(super) fn word(epoch: u32, flags: u64) -> u64 {
    (u64::from(epoch) << 32) | flags
}

#[inline]
pub(super) fn epoch_of(state: u64) -> u32 {
    (state >> 32) as u32
}

/// Why a group operation did nothing.
#[derive(Debug)]
#[non_exhaustive]
pub enum CoreError {
    /// The group is not open under the epoch given: closed already, or
    /// never opened (a stale or garbage handle).
    Dead,
    /// Another thread closed the group while this close waited for it.
    ClosedMeanwhile,
    /// The group was created by a worker for its own pool, the pool has
    /// been destroyed since (its workers finished their work and exited),
    /// and the group has no reference to it to run tasks on.
    PoolGone,
    /// The wait could never end (see [`WouldDeadlock`]); nothing changed.
    WouldDeadlock(WouldDeadlock),
    /// The place cannot be honoured by the group's pool (only from
    /// `spawn` with `check` set); nothing was spawned.
    Place(PlaceError),
}

/// The fields a group's lock guards.
pub(super) struct Inner {
    /// The group's pool.
    pub(super) registry: *const Registry,
    /// Whether the group holds a reference to its pool (an `Arc` count and
    /// a keep-alive count), released by the close.
    pub(super) counted: bool,
    /// The worker that created the group for its own pool (no reference
    /// counted), or null.
    pub(super) owner: *const WorkerInfo,
    pub(super) queue: Vec<Queued>,
    /// Waits running a batch of the queue (whose tasks the batch counts).
    pub(super) batches: usize,
    /// Tasks started from outside the pool and not finished.
    pub(super) started: usize,
    /// Threads blocked on the condition variable; a count of this epoch
    /// (a waiter woken after the close does not count itself off: the
    /// next open starts at zero).
    pub(super) blocked: usize,
    /// The latches of workers that wait for the group while running other
    /// work. Set and emptied by every change that may let a waiter go on,
    /// so empty whenever the group is idle.
    pub(super) latches: Vec<WaiterLatch>,
    /// The first panic of a task, for the next wait to propagate.
    pub(super) panic: Option<Panic>,
    /// Set by an open that lets the owner keep the group warm when it
    /// closes it (`warm.rs`).
    pub(super) warm: Option<WarmKey>,
}

impl Inner {
    /// Whether no task of the group is queued, running in a batch, or
    /// started from outside: then no task of it can be running either.
    pub(super) fn idle(&self) -> bool {
        self.queue.is_empty() && self.batches == 0 && self.started == 0
    }

    fn busy(&self) -> bool {
        !self.idle() || self.panic.is_some()
    }

    /// Keeps `p` if it is the first panic; returns it otherwise, for the
    /// caller to drop *after* letting go of the lock (dropping a payload
    /// runs user code, which may use the group: under the lock that would
    /// wait for ever, or, through the owner's bias, enter twice).
    #[must_use = "a panic that lost must be dropped after the lock is let go"]
    pub(super) fn keep_panic(&mut self, p: Panic) -> Option<Panic> {
        // The first one wins; later ones are dropped (as in a scope).
        if self.panic.is_none() {
            self.panic = Some(p);
            None
        } else {
            Some(p)
        }
    }
}

/// A waiting worker's latch, on that worker's stack.
pub(super) struct WaiterLatch(pub(super) *const WorkerLatch);

// SAFETY: the latch is only set (an atomic operation on a `Sync` latch),
// from any thread, while its worker waits for it; see `wake_waiters`.
unsafe impl Send for WaiterLatch {}

/// The most queue capacity a group keeps for the next group of its slot
/// (C) or its next batch: enough for a task tree's fan-out.
pub(super) const KEPT_CAPACITY: usize = 64;

/// One task group's state: what [`TaskGroup`] owns, and what the C API
/// keeps in each slot of its handle table (reused by the next group, with
/// the epoch bumped).
///
/// Not covered by semver: the C API's building block (see
/// `terroir::__capi`).
pub struct GroupCore {
    pub(super) state: AtomicU64,
    /// The address of the owner's `WorkerInfo` while the group is open
    /// [`OWNED`] (written by the opener before the Release store that
    /// opens it, read after an Acquire load that sees `OWNED`), and after:
    /// it is cleared only by the owner's own thread once the group is
    /// closed (`give_up`), so that no other worker opens the group owned
    /// while its last owner may still be between its owner check and its
    /// bias (`bias.rs`, "Stale threads").
    pub(super) owned_by: AtomicUsize,
    pub(super) bias: Bias,
    pub(super) inner: UnsafeCell<Inner>,
    /// The condition variable of waiters outside every pool, with its
    /// mutex (taken after the lock, never before it).
    pub(super) sleep: Mutex<()>,
    pub(super) wake: Condvar,
}

// SAFETY: `inner` is only accessed under the lock (`Locked`), or by the
// one thread that opens a free group (no other thread can lock it before
// the open's Release store); everything else is atomic or `Sync`.
unsafe impl Sync for GroupCore {}
// SAFETY: as above; the raw pointers in `inner` are to `Sync` objects
// whose lifetimes the protocol guarantees (module docs).
unsafe impl Send for GroupCore {}

impl Default for GroupCore {
    fn default() -> Self {
        GroupCore::new()
    }
}

/// The lock of an open group, held.
pub(crate) struct Locked<'a> {
    pub(super) core: &'a GroupCore,
    pub(super) epoch: u32,
    /// Held through the owner's bias (`bias.rs`): the group stays
    /// [`OWNED`], and letting go is a plain store.
    pub(super) biased: bool,
}

impl Locked<'_> {
    #[inline]
    pub(super) fn inner(&mut self) -> &mut Inner {
        // SAFETY: the lock is held, so this thread alone accesses `inner`.
        unsafe { &mut *self.core.inner.get() }
    }
}

impl Drop for Locked<'_> {
    #[inline]
    fn drop(&mut self) {
        let busy = if self.inner().busy() { BUSY } else { 0 };
        if self.biased {
            // Release: a thread that sees the state (a wait's fast path)
            // sees what was done under the lock.
            self.core
                .state
                .store(word(self.epoch, LIVE | OWNED | busy), Ordering::Release);
            self.core.bias.leave();
        } else {
            self.core
                .state
                .store(word(self.epoch, LIVE | busy), Ordering::Release);
        }
    }
}

/// A `Send` pointer to a group, for the jobs of its tasks. A group
/// outlives them: it is not idle while they run, and neither a close nor
/// a [`TaskGroup`]'s drop frees an idle-less group.
#[derive(Clone, Copy)]
pub(crate) struct CorePtr(pub(crate) *const GroupCore);

// SAFETY: see the type's docs; a group is only accessed through `&`.
unsafe impl Send for CorePtr {}
// SAFETY: as above.
unsafe impl Sync for CorePtr {}

impl CorePtr {
    /// # Safety
    /// The group is alive (see the type's docs).
    #[inline]
    pub(crate) unsafe fn get<'a>(self) -> &'a GroupCore {
        // SAFETY: the caller's promise.
        unsafe { &*self.0 }
    }
}

/// A [`ThreadPool`] that borrows a registry that someone else keeps
/// alive: never dropped (dropping a pool terminates it).
fn pool_view(registry: *const Registry) -> ManuallyDrop<ThreadPool> {
    ManuallyDrop::new(ThreadPool {
        // SAFETY: `registry` came from `Arc::as_ptr` and the caller holds a
        // count for the view's life; the view never drops this `Arc`.
        registry: unsafe { Arc::from_raw(registry) },
    })
}

/// A [`TaskGroup`] that borrows `core` (for its tasks): never dropped.
pub(crate) fn group_view(core: &GroupCore) -> ManuallyDrop<TaskGroup> {
    ManuallyDrop::new(TaskGroup {
        core: ptr::NonNull::from(core),
    })
}

impl GroupCore {
    /// A closed group (epoch 1), ready to be opened.
    pub fn new() -> GroupCore {
        GroupCore {
            state: AtomicU64::new(word(1, 0)),
            owned_by: AtomicUsize::new(0),
            bias: Bias::new(),
            inner: UnsafeCell::new(Inner {
                registry: ptr::null(),
                counted: false,
                owner: ptr::null(),
                queue: Vec::new(),
                batches: 0,
                started: 0,
                blocked: 0,
                latches: Vec::new(),
                panic: None,
                warm: None,
            }),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// The epoch the group is open under, or `None` when it is closed.
    #[inline]
    pub fn epoch(&self) -> Option<u32> {
        let s = self.state.load(Ordering::Acquire);
        (s & LIVE != 0).then_some(epoch_of(s))
    }

    /// Sets up the fields of a closed group and opens it.
    ///
    /// # Safety
    /// The group is closed and the caller is the only thread opening it.
    ///
    /// `owned`: open it [`OWNED`] by `owner` (the calling worker), unless
    /// another worker owned it last and did not close it itself (then
    /// that worker may still be about to take its bias: `bias.rs`, "Stale
    /// threads"; the group opens as any other). `warm`: the owner may keep
    /// it warm (`warm.rs`), if it opens owned; then the group is never
    /// freed, and not counted. The epoch, and whether it opened owned.
    #[inline]
    unsafe fn open_with(
        &self,
        registry: *const Registry,
        counted: bool,
        owner: *const WorkerInfo,
        owned: bool,
        warm: Option<WarmKey>,
    ) -> Option<(u32, bool)> {
        let s = self.state.load(Ordering::Relaxed);
        if s & LIVE != 0 || epoch_of(s) == 0 {
            // Open already, or retired (its epoch would have wrapped).
            return None;
        }
        // SAFETY: closed, so no thread can lock it (locking needs `LIVE`),
        // and the caller alone opens it.
        let inner = unsafe { &mut *self.inner.get() };
        inner.registry = registry;
        inner.counted = counted;
        inner.owner = owner;
        inner.batches = 0;
        inner.started = 0;
        inner.blocked = 0;
        debug_assert!(!counted || warm.is_none());
        let last = self.owned_by.load(Ordering::Relaxed);
        let owned = owned && (last == 0 || last == owner as usize);
        inner.warm = warm.filter(|_| owned);
        debug_assert!(inner.queue.is_empty() && inner.latches.is_empty());
        debug_assert!(inner.panic.is_none());
        let epoch = epoch_of(s);
        let flags = if owned {
            self.owned_by.store(owner as usize, Ordering::Relaxed);
            LIVE | OWNED
        } else {
            LIVE
        };
        self.state.store(word(epoch, flags), Ordering::Release);
        Some((epoch, owned))
    }

    /// Opens the group for the calling worker's own pool, without a
    /// reference to it (see the module docs), when the caller is a worker
    /// (of the pool tagged `tag`, if given: see
    /// `terroir::__capi::set_pool_tag`); its epoch, or `None` when it is
    /// not (or the group is open, or retired). With `warm`, the worker
    /// keeps the group when it closes it, for its next
    /// [`open_warm`](Self::open_warm) (`warm.rs`).
    ///
    /// # Safety
    /// The caller is the only thread opening this group, and no worker
    /// keeps it warm (a close that returned [`Closed::Warm`] left it to
    /// that worker's [`open_warm`](Self::open_warm)). With `warm`, the
    /// group is never freed (nor moved).
    #[inline]
    pub unsafe fn open_here(&self, tag: Option<usize>, warm: Option<WarmKey>) -> Option<u32> {
        let wt = WorkerThread::current()?;
        if tag.is_some_and(|t| super::pool_tag(wt) != t) {
            return None;
        }
        // Kept warm only where the owner's bias opens it owned (decided by
        // `open_with`): the warm open sets `OWNED` without asking.
        let owned = bias::enabled();
        // SAFETY: forwarded.
        let (epoch, owned) =
            unsafe { self.open_with(Arc::as_ptr(wt.registry()), false, wt.info, owned, warm) }?;
        wt.groups_open.set(wt.groups_open.get() + 1);
        // Opened owned, so kept warm when closed (unless `open_with`
        // decided otherwise: the group was another worker's).
        if let Some(w) = warm.filter(|_| owned) {
            wt.warm_groups
                .offer_hot(self, w.key, GroupCore::token(w.key, epoch));
        }
        Some(epoch)
    }

    /// Opens the group for `pool`, holding a reference to it that keeps
    /// it alive until the group is closed; its epoch, or `None` when the
    /// group is open or retired.
    ///
    /// # Safety
    /// The caller is the only thread opening this group, and no worker
    /// keeps it warm (see [`open_here`](Self::open_here)).
    pub unsafe fn open_counted(&self, pool: &ThreadPool) -> Option<u32> {
        let registry = Arc::clone(&pool.registry);
        registry.terminate_count.fetch_add(1, Ordering::Relaxed);
        let raw = Arc::into_raw(registry);
        // SAFETY: forwarded.
        let epoch = unsafe { self.open_with(raw, true, ptr::null(), false, None) }.map(|(e, _)| e);
        if epoch.is_none() {
            // SAFETY: the count and keep-alive taken above, given back.
            unsafe { release(raw) };
        }
        epoch
    }

    /// Takes the lock of the group open under `epoch`.
    #[inline]
    pub(super) fn lock(&self, epoch: u32) -> Result<Locked<'_>, CoreError> {
        self.lock_by(epoch, || {
            WorkerThread::current().map_or(0, |wt| wt.info as usize)
        })
    }

    /// [`lock`](Self::lock) by `wt`, the calling thread's worker if it is
    /// one (one thread-local read less).
    #[inline(always)]
    pub(super) fn lock_as(
        &self,
        epoch: u32,
        wt: Option<&WorkerThread>,
    ) -> Result<Locked<'_>, CoreError> {
        self.lock_by(epoch, || wt.map_or(0, |wt| wt.info as usize))
    }

    /// [`lock`](Self::lock) by the thread whose `WorkerInfo` is at `me()`
    /// (0: not a worker; asked only for an owned group).
    #[inline(always)]
    pub(super) fn lock_by(
        &self,
        epoch: u32,
        me: impl FnOnce() -> usize,
    ) -> Result<Locked<'_>, CoreError> {
        let s = self.state.load(Ordering::Acquire);
        // Decided on this one load: a group open under `epoch` without
        // `OWNED` never becomes owned in that epoch (only an open sets the
        // flag), so the compare-and-swap lock is safe; a load from before
        // the open (a guessed handle, or one passed on without ordering)
        // must not go on to a compare-and-swap that the open's owner would
        // not see (a review's race: two threads inside the lock; loom's
        // `an_owned_lock_racing_the_open_is_exclusive`).
        if s & LIVE == 0 || epoch_of(s) != epoch {
            return Err(CoreError::Dead);
        }
        if s & OWNED != 0 {
            return self.lock_owned(epoch, s, me());
        }
        self.lock_shared(epoch)
    }

    /// [`lock`](Self::lock) of a group that was open under `epoch` and
    /// [`OWNED`] when `s` was read (Acquire), by the thread whose
    /// `WorkerInfo` is at `me` (0: not a worker): through the bias for its
    /// owner, else after revoking it.
    #[inline]
    fn lock_owned(&self, epoch: u32, s: u64, me: usize) -> Result<Locked<'_>, CoreError> {
        debug_assert!(s & LIVE != 0 && epoch_of(s) == epoch);
        if self.is_owner(me) {
            if let Some(g) = self.enter_biased(epoch) {
                return Ok(g);
            }
        } else {
            self.bias.revoke(epoch);
        }
        self.lock_shared(epoch)
    }

    /// Whether the thread whose `WorkerInfo` is at `me` (0: not a worker)
    /// owns the group, for a caller whose Acquire load of the state saw it
    /// open [`OWNED`]: that load saw the open that wrote `owned_by`, and
    /// only a close (`give_up`) and a later open write it again.
    #[inline(always)]
    pub(super) fn is_owner(&self, me: usize) -> bool {
        me != 0 && self.owned_by.load(Ordering::Relaxed) == me
    }

    /// The lock through the owner's bias, for the owner ([`is_owner`]) of
    /// the group open [`OWNED`] under `epoch`; `None` when another thread
    /// revoked the bias (then the compare-and-swap lock). While it is held
    /// nobody else writes the state (`bias.rs`).
    ///
    /// [`is_owner`]: Self::is_owner
    #[inline(always)]
    pub(super) fn enter_biased(&self, epoch: u32) -> Option<Locked<'_>> {
        // Built only once held: a `Locked` unlocks when dropped.
        if !self.bias.enter(epoch) {
            return None;
        }
        Some(Locked {
            core: self,
            epoch,
            biased: true,
        })
    }

    /// The compare-and-swap lock of the group open under `epoch`; clears
    /// [`OWNED`] if it is still set (the caller revoked the bias first, or
    /// is the owner and found it revoked). Only for a caller that saw the
    /// group open under `epoch` (see [`lock`](Self::lock)).
    fn lock_shared(&self, epoch: u32) -> Result<Locked<'_>, CoreError> {
        let mut spins = 0u32;
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s & LIVE == 0 || epoch_of(s) != epoch {
                return Err(CoreError::Dead);
            }
            if s & LOCKED == 0
                && self
                    .state
                    .compare_exchange_weak(
                        s,
                        (s | LOCKED) & !OWNED,
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
            {
                return Ok(Locked {
                    core: self,
                    epoch,
                    biased: false,
                });
            }
            spins += 1;
            if spins < 64 && !cfg!(loom) {
                std::hint::spin_loop();
            } else {
                // The holder may be descheduled: let it run.
                crate::sched::sync::yield_now();
            }
        }
    }

    /// The lock of a group that cannot have been closed meanwhile (the
    /// caller holds a count that keeps it busy).
    pub(super) fn relock(&self, epoch: u32) -> Locked<'_> {
        self.lock(epoch)
            .unwrap_or_else(|_| unreachable!("a busy group was closed"))
    }

    /// Wakes every waiter: the threads blocked on the condition variable,
    /// and the workers working while they wait (their latches are set and
    /// taken off the list, once each). Called with the lock held.
    pub(super) fn wake_waiters(&self, inner: &mut Inner) {
        if inner.blocked > 0 {
            // Lock order: the group's lock, then `sleep`.
            let _sleep = lock(&self.sleep);
            self.wake.notify_all();
        }
        for latch in inner.latches.drain(..) {
            // SAFETY: a listed latch is unset and its worker waits for it
            // in `wait_locked` (which unlists it itself only if that wait
            // unwinds, under the lock), so it is alive until this set.
            unsafe { WorkerLatch::set(latch.0) };
        }
    }

    /// Waits until the group open under `epoch` is idle: see the module
    /// docs. Propagates (resumes) the first panic of its tasks.
    ///
    /// # Errors
    /// [`CoreError::Dead`]; [`CoreError::WouldDeadlock`];
    /// [`CoreError::PoolGone`].
    #[inline]
    pub fn wait(&self, epoch: u32) -> Result<(), CoreError> {
        // Idle and unlocked: nothing to wait for, and the caller cannot be
        // one of the group's tasks (none is running). Acquire: the tasks'
        // work is visible.
        if self.state.load(Ordering::Acquire) & !OWNED == word(epoch, LIVE) {
            return Ok(());
        }
        let (g, wt) = self.lock_to_wait(epoch)?;
        match self.wait_locked(g, wt)? {
            Some((g, panic)) => {
                drop(g);
                if let Some(p) = panic {
                    std::panic::resume_unwind(p);
                }
                Ok(())
            }
            // Closed by another thread meanwhile: it was idle.
            None => Ok(()),
        }
    }

    /// Runs `f` with the group's pool.
    ///
    /// # Errors
    /// [`CoreError::Dead`].
    pub fn with_pool<R>(
        &self,
        epoch: u32,
        f: impl FnOnce(&ThreadPool) -> R,
    ) -> Result<R, CoreError> {
        let registry = {
            let mut g = self.lock(epoch)?;
            let registry = g.inner().registry;
            // SAFETY: alive: counted, or its owner is alive or exited
            // keeping it (see `worker_exits`).
            unsafe { Arc::increment_strong_count(registry) };
            registry
        };
        struct Release(*const Registry);
        impl Drop for Release {
            fn drop(&mut self) {
                // SAFETY: the count taken above.
                unsafe { Arc::decrement_strong_count(self.0) };
            }
        }
        let _release = Release(registry);
        Ok(f(&pool_view(registry)))
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `Started`'s flag, claimed once.
pub(crate) fn claim(flag: &AtomicBool) -> bool {
    !flag.swap(true, Ordering::AcqRel)
}

/// What the loom model of the owner bias drives (`sleep/loom.rs`): a
/// group opened owned by a made-up owner identity, and the lock taken as
/// that owner or as another thread (no worker exists under loom).
#[cfg(all(loom, test))]
pub(crate) mod loom_hooks {
    use super::{GroupCore, Locked, Ordering, LOCKED, OWNED};

    /// Opens `core` owned by the thread known as `owner` (any non-zero
    /// value); its epoch.
    pub(crate) fn open_owned(core: &GroupCore, owner: usize) -> u32 {
        // SAFETY: a new group, opened by this thread alone; the registry
        // and owner pointers are never followed by the lock.
        unsafe { core.open_with(std::ptr::null(), false, owner as *const _, true, None) }
            .map(|(epoch, _)| epoch)
            .expect("a closed group opens")
    }

    /// The lock, taken as `me` (0: not a worker), as `lock` takes it.
    pub(crate) fn lock_as(core: &GroupCore, epoch: u32, me: usize) -> Locked<'_> {
        try_lock_as(core, epoch, me).expect("the group is open")
    }

    /// [`lock_as`] for an epoch that may not be open (yet): `None` when
    /// it is not. The real lock, with `me` for the thread's identity.
    pub(crate) fn try_lock_as(core: &GroupCore, epoch: u32, me: usize) -> Option<Locked<'_>> {
        core.lock_by(epoch, || me).ok()
    }

    /// The owner `me`'s biased close of the idle group (as
    /// `close_idle_owned`): the epoch it left, or `None` (nothing done:
    /// revoked, or not idle).
    pub(crate) fn close_owned(core: &GroupCore, epoch: u32, me: usize) -> Option<u32> {
        core.close_biased(epoch, |c| c.owned_by.load(Ordering::Relaxed) == me)
            .map(|(next, _)| next)
    }

    /// Opens the group `close_owned` closed again, as a warm open does
    /// (`warm.rs`); its epoch.
    pub(crate) fn reopen_kept(core: &GroupCore) -> u32 {
        // SAFETY: the models call this only on the thread that closed the
        // group, which keeps it (nobody else opens it).
        unsafe { core.reopen_kept() }.expect("a closed group reopens")
    }

    /// Closes the group `g` holds (as a close does, without what the
    /// close releases): the next epoch.
    pub(crate) fn shut(g: Locked<'_>) -> u32 {
        g.core.shut(g)
    }

    /// What a close by `me` does to the group's ownership once it closed
    /// it (`free`, `keep_warm`).
    pub(crate) fn give_up(core: &GroupCore, me: usize) {
        core.give_up(me);
    }

    /// Whether `g` holds the lock through the owner's bias, and if so
    /// whether the bias still says so (`owner_in`: what a revoke waits on).
    pub(crate) fn biased(g: &Locked<'_>) -> Option<bool> {
        g.biased.then(|| g.core.bias.owner_is_in())
    }

    /// Whether the group is still owned, and unlocked.
    pub(crate) fn owned_and_unlocked(core: &GroupCore) -> (bool, bool) {
        let s = core.state.load(Ordering::Acquire);
        (s & OWNED != 0, s & LOCKED == 0)
    }
}
