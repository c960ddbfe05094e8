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
//! one thread-local read, a pop, three stores. With the C API's fast
//! paths free of calls, an empty group executes about 119 instructions,
//! the benchmark's loop included (`examples/c/group_cost.c`'s `empty`
//! mode under callgrind).
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
//! and in no free list but the worker's.

use std::cell::Cell;
use std::ptr;

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

impl Closed {
    /// Whether the slot may hold another group (kept warm, or free).
    pub fn reusable(self) -> bool {
        self != Closed::Retired
    }
}

/// How many closed groups a worker keeps warm: a task tree's nesting of
/// groups per worker, with some to spare.
pub(crate) const WARM_GROUPS: usize = 16;

/// A worker's warm groups, a stack (the latest closed is opened first),
/// each with its [`WarmKey`]'s `key`.
pub(crate) struct WarmGroups {
    len: Cell<usize>,
    groups: [Cell<(*const GroupCore, u32)>; WARM_GROUPS],
}

impl WarmGroups {
    pub(crate) const fn new() -> WarmGroups {
        WarmGroups {
            len: Cell::new(0),
            groups: [const { Cell::new((ptr::null(), 0)) }; WARM_GROUPS],
        }
    }

    /// Keeps `core` (closed, opened with a [`WarmKey`] of `key`, never
    /// freed); false when full.
    #[inline(always)]
    fn push(&self, core: &GroupCore, key: u32) -> bool {
        let n = self.len.get();
        let Some(entry) = self.groups.get(n) else {
            return false;
        };
        entry.set((core, key));
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
        Some((unsafe { &*core }, key))
    }

    /// How many groups are kept (for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.len.get()
    }
}

impl Drop for WarmGroups {
    fn drop(&mut self) {
        // The worker's thread is no worker any more: its groups go back to
        // their tables.
        while let Some((core, key)) = self.pop() {
            // SAFETY: kept warm, so closed and reachable by this thread
            // alone (module docs).
            let warm = unsafe { (*core.inner.get()).warm };
            if let Some(w) = warm {
                debug_assert_eq!(w.key, key);
                (w.drain)(key);
            }
        }
    }
}

impl GroupCore {
    /// Opens the group the calling worker kept warm last (of the pool
    /// tagged `tag`, if given: see `terroir::__capi::set_pool_tag`), as
    /// [`open_here`](Self::open_here) opened it before: its [`WarmKey`]'s
    /// `key` and its new epoch; `None` when the caller is not such a
    /// worker or keeps no group warm.
    #[inline(always)]
    pub fn open_warm(tag: Option<usize>) -> Option<(u32, u32)> {
        let wt = WorkerThread::current()?;
        if tag.is_some_and(|t| super::pool_tag(wt) != t) {
            return None;
        }
        let (core, key) = wt.warm_groups.pop()?;
        debug_assert_eq!(
            core.owned_by.load(Ordering::Relaxed),
            wt.info as usize,
            "a warm group is its worker's own"
        );
        // SAFETY: kept warm by this worker: closed, and this thread alone
        // reaches it (module docs); its fields are this worker's own open's.
        let epoch = unsafe { core.reopen_kept() };
        wt.groups_open.set(wt.groups_open.get() + 1);
        Some((key, epoch))
    }

    /// Opens a kept group again, owned, under the epoch its close left:
    /// that epoch.
    ///
    /// # Safety
    /// The group is closed, kept warm by the caller (so no other thread
    /// opens it), and was last open owned by the caller.
    #[inline(always)]
    pub(super) unsafe fn reopen_kept(&self) -> u32 {
        let s = self.state.load(Ordering::Relaxed);
        debug_assert!(s & !(u64::from(u32::MAX) << 32) == 0 && epoch_of(s) != 0);
        let epoch = epoch_of(s);
        // Before the Release store that opens it, as `open_with` does.
        self.bias.reset();
        self.state
            .store(word(epoch, LIVE | OWNED), Ordering::Release);
        epoch
    }

    /// [`close`](Self::close) of an idle group open under `epoch`, by its
    /// owner, through its bias (`bias.rs`: no read-modify-write); what
    /// became of its slot, or `None` (nothing done) when the group is not
    /// open, idle and owned by the caller (or keeps an unusually large
    /// queue capacity, which [`close`](Self::close) sheds).
    #[inline(always)]
    pub fn close_idle_owned(&self, epoch: u32) -> Option<Closed> {
        let mut worker = None;
        let (next, warm) = self.close_biased(epoch, || {
            let wt = WorkerThread::current()?;
            worker = Some(wt);
            Some(wt.info as usize)
        })?;
        let wt = worker?;
        wt.groups_open.set(wt.groups_open.get() - 1);
        Some(self.keep_warm(wt, next, warm))
    }

    /// The close of [`close_idle_owned`](Self::close_idle_owned) by the
    /// thread whose `WorkerInfo` is at `me()` (asked only once the group
    /// is seen open, idle and owned; `None`: not a worker): the epoch it
    /// left (the next open's) and the group's [`WarmKey`]'s `key`, or
    /// `None` (nothing done).
    #[inline(always)]
    pub(super) fn close_biased(
        &self,
        epoch: u32,
        me: impl FnOnce() -> Option<usize>,
    ) -> Option<(u32, Option<u32>)> {
        // Idle (no task, no panic to report), unlocked, owned.
        if self.state.load(Ordering::Acquire) != word(epoch, LIVE | OWNED) {
            return None;
        }
        let me = me()?;
        // `is_owner` for a worker (whose info is never null), and the lock
        // through the bias without a `Locked`, whose drop would be
        // compiled in here (callgrind: 66 instructions a close with it).
        if self.owned_by.load(Ordering::Relaxed) != me || !self.bias.enter() {
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
        debug_assert!(!inner.counted && inner.owner as usize == me);
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

    /// The end of a close by the group's owner (`free`), after it closed
    /// the group: keeps it warm when it can.
    #[inline(always)]
    pub(super) fn keep_warm(&self, wt: &WorkerThread, next: u32, warm: Option<u32>) -> Closed {
        if next == 0 {
            Closed::Retired
        } else if warm.is_some_and(|key| wt.warm_groups.push(self, key)) {
            Closed::Warm
        } else {
            Closed::Free
        }
    }
}

/// Warm groups with real workers: kept by the close, opened again by the
/// same worker with the next epoch, refused to stale epochs, to other
/// pools' tags, after an adoption and past the list's size, and given back
/// when the worker exits.
#[cfg(all(test, not(loom)))]
mod tests {
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

    #[test]
    fn a_closed_group_is_opened_again_by_its_worker_under_the_next_epoch() {
        assert_bias();
        pool(1).install(|| {
            let (core, e) = open_warm_keyed(7, no_drain);
            assert_eq!(core.close_idle_owned(e), Some(Closed::Warm));
            assert_eq!(kept(), 1);
            // Another pool's tag: not this worker's group to open.
            assert_eq!(GroupCore::open_warm(Some(usize::MAX)), None);
            assert_eq!(GroupCore::open_warm(None), Some((7, e + 1)));
            assert_eq!(kept(), 0);
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
            assert_eq!(GroupCore::open_warm(None), Some((7, e + 2)));
            assert_eq!(core.close_idle_owned(e + 2), Some(Closed::Warm));
            assert_eq!(GroupCore::open_warm(None), Some((7, e + 3)));
            assert_eq!(core.close_idle_owned(e + 3), Some(Closed::Warm));
            // Nothing else is kept: a second open finds none.
            assert_eq!(GroupCore::open_warm(None), Some((7, e + 4)));
            assert_eq!(GroupCore::open_warm(None), None);
            assert_eq!(core.close_idle_owned(e + 4), Some(Closed::Warm));
            assert_eq!(GroupCore::open_warm(None).map(|(k, _)| k), Some(7));
        });
    }

    #[test]
    fn groups_without_a_key_or_past_the_list_are_freed() {
        assert_bias();
        pool(1).install(|| {
            let core: &'static GroupCore = Box::leak(Box::new(GroupCore::new()));
            // SAFETY: a new group, opened by this thread alone.
            let e = unsafe { core.open_here(None, None) }.expect("opens");
            assert_eq!(core.close_idle_owned(e), Some(Closed::Free));
            let open: Vec<_> = (0..WARM_GROUPS as u32 + 3)
                .map(|k| open_warm_keyed(k, no_drain))
                .collect();
            let closed: Vec<_> = open
                .iter()
                .map(|&(core, e)| core.close_idle_owned(e))
                .collect();
            assert!(closed[..WARM_GROUPS]
                .iter()
                .all(|c| *c == Some(Closed::Warm)));
            assert!(closed[WARM_GROUPS..]
                .iter()
                .all(|c| *c == Some(Closed::Free)));
            // Latest kept first.
            let keys: Vec<_> = std::iter::from_fn(|| GroupCore::open_warm(None))
                .map(|(k, _)| k)
                .collect();
            assert_eq!(keys, (0..WARM_GROUPS as u32).rev().collect::<Vec<_>>());
        });
    }

    /// An adopted group counts a reference to its pool, which a warm open
    /// would not take again: its close frees it. A group another thread
    /// only locked (revoking the bias) is kept, and opens owned again.
    #[test]
    fn an_adopted_group_is_freed_and_a_revoked_one_kept() {
        assert_bias();
        let pool = pool(1);
        let (core, e) = pool.install(|| open_warm_keyed(1, no_drain));
        // Outside the pool: a spawn adopts.
        std::thread::spawn(move || core.spawn(e, None, false, |_| ()).expect("spawn"))
            .join()
            .unwrap();
        pool.install(move || {
            assert_eq!(core.close(e).ok(), Some(Closed::Free));
            assert_eq!(GroupCore::open_warm(None), None);
        });
        let (core, e) = pool.install(|| open_warm_keyed(2, no_drain));
        std::thread::spawn(move || core.with_pool(e, |_| ()).expect("open"))
            .join()
            .unwrap();
        assert!(core.bias.is_revoked(), "revoked");
        assert_eq!(core.state.load(Ordering::Relaxed) & OWNED, 0);
        pool.install(move || {
            assert_eq!(core.close(e).ok(), Some(Closed::Warm));
            assert_eq!(GroupCore::open_warm(None), Some((2, e + 1)));
            assert!(!core.bias.is_revoked(), "reset");
            assert_eq!(core.close_idle_owned(e + 1), Some(Closed::Warm));
        });
    }

    #[test]
    fn a_group_whose_epoch_would_wrap_is_retired_not_kept() {
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
            assert_eq!(GroupCore::open_warm(None), None);
            // SAFETY: as above.
            assert_eq!(unsafe { core.open_here(None, None) }, None, "retired");
        });
    }

    static DRAINED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

    fn drain(key: u32) {
        DRAINED.lock().unwrap().push(key);
    }

    #[test]
    fn a_worker_that_exits_gives_its_warm_groups_back() {
        assert_bias();
        let pool = pool(1);
        pool.install(|| {
            for key in [1000, 1001, 1002] {
                let (core, e) = open_warm_keyed(key, drain);
                assert_eq!(core.close_idle_owned(e), Some(Closed::Warm));
            }
        });
        assert!(
            DRAINED.lock().unwrap().is_empty(),
            "kept while the worker runs"
        );
        drop(pool);
        let start = Instant::now();
        loop {
            let mut got = DRAINED.lock().unwrap().clone();
            got.sort_unstable();
            if got == [1000, 1001, 1002] {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "drained {got:?} of [1000, 1001, 1002]"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
