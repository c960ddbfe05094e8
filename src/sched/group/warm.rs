//! Warm groups: the closed groups a worker keeps ready to open again, and
//! the owner's open and close of an empty group built on them.
//!
//! An empty C task group (`terroir_group_create` then
//! `terroir_group_destroy` in a task) executed about 240 instructions
//! (14.7 ns; libgomp's empty `taskwait` takes 3 ns): four thread-local
//! reads (the C table's free list and the worker, in each call), the
//! table's slot lookup in both, the open's field stores, and the register
//! saves around calls the fast paths made. A group that a worker opened
//! for its own pool and closed again leaves its fields as they were
//! (`registry`, `owner`, `owned_by`: all the worker's own, none counted),
//! so when the same worker opens it again there is nothing to set up but
//! the state word. So the close keeps the group on the worker
//! ([`WarmGroups`], in the `WorkerThread` that the one thread-local read
//! finds anyway), and [`GroupCore::open_warm`] opens the last one kept:
//! one thread-local read, a pop, a check that the group is closed, and
//! two stores (the state, the worker's count of its open groups; the hot
//! group below takes two more). With
//! the C API's fast paths free of calls, an empty group executed about
//! 116 instructions, the benchmark's loop included
//! (`examples/c/group_cost.c`'s `empty` mode under callgrind).
//!
//! ## The hot group
//!
//! The group a worker opened last (with a key, owned) is its *hot* group,
//! named by its [`token`](GroupCore::token) (the C handle). A destroy
//! whose handle is the hot token ([`GroupCore::close_warm`]) needs no
//! table lookup, and no owner check beyond the state's: the group is
//! open, owned, under the epoch this worker opened it under, so this
//! worker owns it. Closed, it stays the hot group, *kept*, and the next
//! open takes it before the stack. The hot group is not in the stack:
//! a close of it by this worker (`keep_warm`) marks it kept where a
//! close of another group would push that one (a close that frees, for
//! a blocked waiter counted or a retired epoch, frees it as any other).
//! A close by another thread frees it (its slot goes to that thread's
//! free list) and leaves it unkept: the worker never opens it again
//! through the hot path, nor gives it back when it exits; the next group
//! it opens becomes the hot one. A hot group replaced while open (a
//! group nested in it was opened) is closed through its slot and stacked
//! (or freed if the stack is full). So a worker keeps at most
//! [`WARM_GROUPS`] groups on the stack and one hot. With it, an empty
//! group executes 88 instructions (116 through the stack and the table;
//! callgrind, `group_cost 100000|200000 1 1 empty`). The tokens are the C
//! table's handles: [`close_warm`](GroupCore::close_warm) closes the hot
//! group for a token equal to its own, whatever the caller meant.
//!
//! Only a group opened with a [`WarmKey`] is kept: a group of the C
//! API's table (never freed), opened by its owner for its own pool, not
//! adopted since (an adopted group counts a reference, which its next
//! open must not inherit). The key is what the table calls the slot, so
//! that the open can name it in the handle; when the worker's thread
//! stops being a worker, the groups it keeps go back to the table through
//! the key's `drain`.
//!
//! While a group is kept warm nobody else can reach its fields: it is
//! closed (every lock and every open needs it open, or free in a table),
//! and in no free list but the worker's. Its fields are as its owner's
//! close of an idle group left them: no task, no latch, no blocked waiter
//! counted (`free` keeps no group with one), its `owned_by` the worker's.
//! A worker state that is never dropped
//! (`ThreadPoolBuilder::use_current_thread`) keeps none
//! ([`WarmGroups::none`]).

use std::cell::Cell;
use std::ptr::NonNull;

use super::core::{epoch_of, word, GroupCore, KEPT_CAPACITY, LIVE, OWNED};
use crate::sched::sync::Ordering;
use crate::sched::worker::WorkerThread;

/// What makes a group worth keeping warm: its slot's name in the C API's
/// table, and how to give the slot back to the table.
#[derive(Clone, Copy, Debug)]
pub struct WarmKey {
    /// The slot's index in its table (carried into the handle).
    pub key: u32,
    /// Gives the slot `key` back to its table (called on the worker's
    /// thread as it stops being a worker, for each group still kept).
    pub drain: fn(u32),
}

/// What a close did with the group's slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closed {
    /// Kept warm by the calling worker (its next [`GroupCore::open_warm`]
    /// may open it): the slot must not be freed.
    Warm,
    /// Closed; the slot is free for a new group.
    Free,
    /// Closed for good: its epoch would wrap around (the slot is never
    /// used again).
    Retired,
}

/// How many closed groups a worker keeps warm: a task tree's nesting of
/// groups per worker, with some to spare.
pub(crate) const WARM_GROUPS: usize = 16;

/// A worker's warm groups: the hot one (see the module docs), and a
/// stack (the latest closed is opened first), each with its
/// [`WarmKey`]'s `key`.
pub(crate) struct WarmGroups {
    /// The hot group: the last one this worker opened with a key (while
    /// no hot group was kept), or `None`.
    hot: Cell<Option<NonNull<GroupCore>>>,
    hot_key: Cell<u32>,
    /// [`GroupCore::token`] of the hot group's latest open by this worker
    /// (0, which no token is, before the first).
    hot_token: Cell<u64>,
    /// The hot group is closed by this worker and in no free list: this
    /// worker's to open again, as a group of the stack is.
    hot_kept: Cell<bool>,
    len: Cell<usize>,
    /// How many it may keep: [`WARM_GROUPS`], or 0 for a worker that is
    /// never dropped (so could never give them back; it has no hot group
    /// either).
    cap: usize,
    groups: [Cell<(NonNull<GroupCore>, u32)>; WARM_GROUPS],
}

impl WarmGroups {
    pub(crate) const fn new() -> WarmGroups {
        WarmGroups::with_capacity(WARM_GROUPS)
    }

    /// A list that keeps nothing: for a worker state that is leaked
    /// (`ThreadPoolBuilder::use_current_thread`), whose drop would never
    /// give its groups back to their tables.
    pub(crate) const fn none() -> WarmGroups {
        WarmGroups::with_capacity(0)
    }

    const fn with_capacity(cap: usize) -> WarmGroups {
        WarmGroups {
            hot: Cell::new(None),
            hot_key: Cell::new(0),
            hot_token: Cell::new(0),
            hot_kept: Cell::new(false),
            len: Cell::new(0),
            cap,
            groups: [const { Cell::new((NonNull::dangling(), 0)) }; WARM_GROUPS],
        }
    }

    /// After this worker opened `core` (with a key, owned) as `token`:
    /// makes it the hot group, unless the hot group is kept (closed, in no
    /// list but this one: it must not be lost). The group opened last is
    /// the one a loop of creates and destroys, the innermost of a nest,
    /// destroys next; a hot group replaced while open is closed through
    /// its table slot (`close_warm`'s lookup) and stacked.
    #[inline]
    pub(super) fn offer_hot(&self, core: &GroupCore, key: u32, token: u64) {
        if self.cap == 0 || self.hot_kept.get() {
            return;
        }
        self.hot.set(Some(NonNull::from(core)));
        self.hot_key.set(key);
        self.hot_token.set(token);
    }

    /// Whether `core` is the hot group.
    #[inline(always)]
    fn is_hot(&self, core: &GroupCore) -> bool {
        self.hot.get() == Some(NonNull::from(core))
    }

    /// Keeps `core` (closed, opened with a [`WarmKey`] of `key`, never
    /// freed); false when full.
    #[inline(always)]
    fn push(&self, core: &GroupCore, key: u32) -> bool {
        let n = self.len.get();
        if n >= self.cap {
            return false;
        }
        debug_assert!(self.cap <= WARM_GROUPS);
        // SAFETY: `n < cap <= WARM_GROUPS` (`new`, `none`), within the
        // array (one compare less than a checked index, on every close).
        let entry = unsafe { self.groups.get_unchecked(n) };
        entry.set((NonNull::from(core), key));
        self.len.set(n + 1);
        true
    }

    #[inline(always)]
    fn pop(&self) -> Option<(&'static GroupCore, u32)> {
        let n = self.len.get().checked_sub(1)?;
        self.len.set(n);
        // `len` is at most `WARM_GROUPS` (`push`).
        debug_assert!(n < WARM_GROUPS);
        // SAFETY: `n < len <= WARM_GROUPS`, within the array.
        let (core, key) = unsafe { self.groups.get_unchecked(n) }.get();
        // SAFETY: pushed by `push`, of a group opened by `open_here` with
        // a `WarmKey`, whose caller promised a group that is never freed.
        // (A `NonNull`, so that the `Some` needs no null test.)
        Some((unsafe { core.as_ref() }, key))
    }

    /// How many groups are kept, the hot one included (for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.len.get() + usize::from(self.hot_kept.get())
    }
}

impl Drop for WarmGroups {
    fn drop(&mut self) {
        // The worker's thread is no worker any more: its groups go back to
        // their tables (the hot one only if kept: else it is open, or was
        // closed by another thread, which freed it).
        let hot = self
            .hot
            .get()
            .filter(|_| self.hot_kept.get())
            // SAFETY: never freed (`offer_hot`).
            .map(|h| (unsafe { h.as_ref() }, self.hot_key.get()));
        self.hot_kept.set(false);
        let stack = std::iter::from_fn(|| self.pop());
        for (core, key) in hot.into_iter().chain(stack) {
            // SAFETY: kept warm, so closed and reachable by this thread
            // alone (module docs).
            let (warm, owner) = unsafe { ((*core.inner.get()).warm, (*core.inner.get()).owner) };
            if let Some(w) = warm {
                debug_assert_eq!(w.key, key);
                debug_assert_eq!(
                    core.owned_by.load(Ordering::Relaxed),
                    owner as usize,
                    "a warm group is owned by its opener"
                );
                // This worker opened it owned, and closed it itself.
                core.give_up(owner as usize);
                (w.drain)(key);
            }
        }
    }
}

impl GroupCore {
    /// The name of the group kept as `key` open under `epoch`, for a
    /// caller of [`open_warm`](Self::open_warm) and
    /// [`close_warm`](Self::close_warm): `epoch << 32 | (key + 1)`, the C
    /// API's handle of its slot `key` (never 0).
    #[inline(always)]
    pub fn token(key: u32, epoch: u32) -> u64 {
        (u64::from(epoch) << 32) | (u64::from(key) + 1)
    }

    /// Opens the group the calling worker kept warm last (of the pool
    /// tagged `tag`, if given: see `terroir::__capi::set_pool_tag`), as
    /// [`open_here`](Self::open_here) opened it before: the hot group if it
    /// is kept, else the latest of the stack; its [`token`](Self::token);
    /// `None` when the caller is not such a worker or keeps no group warm.
    ///
    /// The worker is found by the thread pointer (`current.rs`): `None`
    /// also when that finds none, whether or not the caller is a worker;
    /// [`open_warm_slow`](Self::open_warm_slow) asks the thread-local.
    #[inline(always)]
    pub fn open_warm(tag: Option<usize>) -> Option<u64> {
        Self::open_warm_in(WorkerThread::current_by_thread_pointer()?, tag)
    }

    /// [`open_warm`](Self::open_warm) for a caller found by the
    /// thread-local (a call in a shared library: for slow paths).
    pub fn open_warm_slow(tag: Option<usize>) -> Option<u64> {
        Self::open_warm_in(WorkerThread::current()?, tag)
    }

    #[inline(always)]
    fn open_warm_in(wt: &WorkerThread, tag: Option<usize>) -> Option<u64> {
        if tag.is_some_and(|t| super::pool_tag(wt) != t) {
            return None;
        }
        let w = &wt.warm_groups;
        let token = if w.hot_kept.get() {
            w.hot_kept.set(false);
            // SAFETY: kept, so set, and never freed (`offer_hot`).
            let core = unsafe { w.hot.get()?.as_ref() };
            // SAFETY: kept by this worker: closed, and this thread alone
            // reaches it (module docs); its fields are this worker's own
            // open's.
            let epoch = unsafe { core.reopen_kept() }?;
            let token = GroupCore::token(w.hot_key.get(), epoch);
            w.hot_token.set(token);
            token
        } else {
            let (core, key) = w.pop()?;
            // SAFETY: as above, for a group of the stack.
            let epoch = unsafe { core.reopen_kept() }?;
            let token = GroupCore::token(key, epoch);
            w.offer_hot(core, key, token);
            token
        };
        wt.groups_open.set(wt.groups_open.get() + 1);
        Some(token)
    }

    /// Opens a kept group again, owned, under the epoch its close left:
    /// that epoch; `None` (nothing done, and the group is no longer kept)
    /// when the group is not closed after all, which would be a bug of
    /// this crate: checked, as opening an open group would put two
    /// threads in its lock.
    ///
    /// # Safety
    /// The group is kept warm by the caller (so no other thread opens it),
    /// and was last open owned by the caller, who closed it.
    #[inline(always)]
    pub(super) unsafe fn reopen_kept(&self) -> Option<u32> {
        let s = self.state.load(Ordering::Relaxed);
        // Closed: no flag (one test).
        if s as u32 != 0 {
            debug_assert!(false, "a warm group is open: {s:#x}");
            return None;
        }
        let epoch = epoch_of(s);
        debug_assert!(epoch != 0, "a retired group was kept warm");
        debug_assert_eq!(
            self.owned_by.load(Ordering::Relaxed),
            // SAFETY: closed, and reached by this thread alone (the caller
            // keeps it).
            unsafe { (*self.inner.get()).owner } as usize,
            "a warm group is owned by its opener"
        );
        #[cfg(debug_assertions)]
        {
            // SAFETY: as above.
            let inner = unsafe { &*self.inner.get() };
            // The fields the open would set are what its close left: an
            // idle group's, the same owner's (module docs).
            debug_assert!(inner.idle() && inner.latches.is_empty() && inner.blocked == 0);
            debug_assert!(!inner.counted);
        }
        // The bias needs no reset: a revoke names its epoch (`bias.rs`).
        self.state
            .store(word(epoch, LIVE | OWNED), Ordering::Release);
        Some(epoch)
    }

    /// [`close`](Self::close) of an idle group open under `epoch`, by its
    /// owner, through its bias (`bias.rs`: no read-modify-write); what
    /// became of its slot, or `None` (nothing done) when the group is not
    /// open, idle and owned by the caller (or keeps an unusually large
    /// queue capacity, which [`close`](Self::close) sheds).
    #[inline(always)]
    pub fn close_idle_owned(&self, epoch: u32) -> Option<Closed> {
        let mut worker = None;
        let (next, warm) = self.close_biased(epoch, |core| {
            let Some(wt) = WorkerThread::current() else {
                return false;
            };
            worker = Some(wt);
            core.owned_by.load(Ordering::Relaxed) == wt.info as usize
        })?;
        let wt = worker?;
        wt.groups_open.set(wt.groups_open.get() - 1);
        Some(self.keep_warm(wt, next, warm))
    }

    /// [`close_idle_owned`](Self::close_idle_owned) of the group named
    /// `token` ([`token`](Self::token)): the calling worker's hot group
    /// when its hot token is `token` (then the owner check is the state's:
    /// open owned under the epoch this worker opened it under, so by this
    /// worker), else `lookup()`'s group (the caller's table slot for
    /// `token`, if any). `None`: nothing done, as for `close_idle_owned`;
    /// also when the thread pointer finds no worker (as for
    /// [`open_warm`](Self::open_warm)), where [`close`](Self::close) does
    /// the same.
    #[inline(always)]
    pub fn close_warm<'a>(
        token: u64,
        lookup: impl FnOnce() -> Option<&'a GroupCore>,
    ) -> Option<Closed> {
        let wt = WorkerThread::current_by_thread_pointer()?;
        let w = &wt.warm_groups;
        let epoch = (token >> 32) as u32;
        if token == w.hot_token.get() {
            // SAFETY: a hot token is set with the hot group, never freed
            // (`offer_hot`).
            let core = unsafe { w.hot.get()?.as_ref() };
            let (next, warm) = core.close_biased(epoch, |_| true)?;
            // Offered only after an open with a key (`offer_hot`).
            debug_assert!(warm.is_some());
            wt.groups_open.set(wt.groups_open.get() - 1);
            // `keep_warm`'s outcome for the hot group, spelled out: no
            // load of its key, no compare with the hot pointer.
            if next == 0 {
                w.hot.set(None);
                w.hot_token.set(0);
                core.give_up(wt.info as usize);
                return Some(Closed::Retired);
            }
            w.hot_kept.set(true);
            return Some(Closed::Warm);
        }
        let core = lookup()?;
        let (next, warm) = core.close_biased(epoch, |core| {
            core.owned_by.load(Ordering::Relaxed) == wt.info as usize
        })?;
        wt.groups_open.set(wt.groups_open.get() - 1);
        Some(core.keep_warm(wt, next, warm))
    }

    /// The close of [`close_idle_owned`](Self::close_idle_owned) by the
    /// group's owner, if `owner(self)` says the caller is (asked only once
    /// the group is seen open under `epoch`, idle and owned, so that
    /// `owned_by` is that epoch's): the epoch it left (the next open's) and
    /// the group's [`WarmKey`]'s `key`, or `None` (nothing done).
    #[inline(always)]
    pub(super) fn close_biased(
        &self,
        epoch: u32,
        owner: impl FnOnce(&GroupCore) -> bool,
    ) -> Option<(u32, Option<u32>)> {
        // Idle (no task, no panic to report), unlocked, owned.
        if self.state.load(Ordering::Acquire) != word(epoch, LIVE | OWNED) {
            return None;
        }
        // `is_owner`, and the lock through the bias without a `Locked`,
        // whose drop would be compiled in here (callgrind: 66 instructions
        // a close with it).
        if !owner(self) || !self.bias.enter(epoch) {
            return None;
        }
        // Held. Nobody else wrote the state since the load (the owner holds
        // the lock now), so the group is still idle. Opened owned, so by
        // this worker for its own pool, and (never adopted: adopting clears
        // `OWNED`) holding no count: `free`, for this case.
        debug_assert_eq!(
            self.state.load(Ordering::Relaxed),
            word(epoch, LIVE | OWNED)
        );
        // SAFETY: the lock is held (through the bias), until `leave`.
        let inner = unsafe { &*self.inner.get() };
        debug_assert!(
            !inner.counted && inner.owner as usize == self.owned_by.load(Ordering::Relaxed)
        );
        if inner.queue.capacity() > KEPT_CAPACITY {
            // Rare (a group that once held many tasks): `free` sheds it,
            // out of this path's way. Nothing was changed.
            self.bias.leave();
            return None;
        }
        let warm = inner.warm.map(|w| w.key);
        let next = epoch.wrapping_add(1);
        self.state.store(word(next, 0), Ordering::Release);
        self.bias.leave();
        Some((next, warm))
    }

    /// The end of a close by the group's opener `wt` (`free`), after it
    /// closed the group: keeps it warm when it can (only a group opened
    /// owned has a `warm` key); else [`give_up`](Self::give_up).
    #[inline(always)]
    pub(super) fn keep_warm(&self, wt: &WorkerThread, next: u32, warm: Option<u32>) -> Closed {
        let w = &wt.warm_groups;
        if next != 0
            && warm.is_some_and(|key| {
                // The hot group stays the hot one, kept.
                if w.is_hot(self) {
                    w.hot_key.set(key);
                    w.hot_kept.set(true);
                    true
                } else {
                    w.push(self, key)
                }
            })
        {
            return Closed::Warm;
        }
        // The opener is not always the owner: a group sticky to another
        // worker opened not owned (`open_with`), and that worker's
        // ownership must stay (a review's race: cleared here, the group
        // opened owned again beside its late owner).
        self.give_up(wt.info as usize);
        if next == 0 {
            // As the hot path retires the hot group (`close_warm`): a
            // retired group is nobody's hot one.
            if w.is_hot(self) {
                w.hot.set(None);
                w.hot_token.set(0);
            }
            Closed::Retired
        } else {
            Closed::Free
        }
    }

    /// Clears `owned_by` if it is `me` (the calling thread's
    /// `WorkerInfo`), after the caller closed the group: the one thread
    /// that could be between an owner check of a past epoch and its bias
    /// is the owner, and it is not, as it is here (no owner check is
    /// carried across anything that could run the close: every lock after
    /// user code or a wait checks afresh). Before the slot is freed, whose
    /// free list (a mutex) orders it before the next open; the state word
    /// does not (the close's store came first).
    #[inline(always)]
    pub(super) fn give_up(&self, me: usize) {
        if self.owned_by.load(Ordering::Relaxed) == me {
            self.owned_by.store(0, Ordering::Relaxed);
        }
    }
}

/// Warm groups with real workers: kept by the close, opened again by the
/// same worker with the next epoch, refused to stale epochs, to other
/// pools' tags, after an adoption and past the list's size, and given back
/// when the worker exits.
#[cfg(all(test, not(loom)))]
mod tests;
