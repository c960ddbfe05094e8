//! The close of a task group: wait until idle, bump the epoch, and
//! release what the group held (its count of the pool, or the owner's
//! count of its open groups), or keep it warm (`warm.rs`).

use std::mem;
use std::ptr;

use super::core::{word, CoreError, GroupCore, Locked, Panic, KEPT_CAPACITY, LIVE, LOCKED};
use super::pool_ref::release;
use super::warm::Closed;
use crate::sched::sync::Ordering;
use crate::sched::worker::WorkerThread;

impl GroupCore {
    /// Waits for the group open under `epoch` to be idle (as [`wait`]) and
    /// closes it: the epoch is bumped, and the group may be opened again
    /// (what became of its slot: [`Closed`]; [`Closed::Retired`] when the
    /// epoch would wrap, so the group is never to be opened again). A
    /// panic of a task is resumed after the close.
    ///
    /// # Errors
    /// As [`wait`] (then nothing changes), and
    /// [`CoreError::ClosedMeanwhile`] when another thread closed the group
    /// during this call.
    ///
    /// [`wait`]: Self::wait
    #[inline]
    pub fn close(&self, epoch: u32) -> Result<Closed, CoreError> {
        if let Some(closed) = self.close_idle_owned(epoch) {
            return Ok(closed);
        }
        // Idle (no task, no panic to report) and unlocked: close it at once.
        if self
            .state
            .compare_exchange(
                word(epoch, LIVE),
                word(epoch, LIVE | LOCKED),
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            let g = Locked {
                core: self,
                epoch,
                biased: false,
            };
            return Ok(self.free(g, WorkerThread::current()));
        }
        self.close_slow(epoch)
    }

    #[cold]
    #[inline(never)]
    fn close_slow(&self, epoch: u32) -> Result<Closed, CoreError> {
        let (closed, panic) = self.close_inner(epoch)?;
        if let Some(p) = panic {
            std::panic::resume_unwind(p);
        }
        Ok(closed)
    }

    /// [`close`](Self::close), the panic of a task returned rather than
    /// resumed.
    pub(crate) fn close_collect(&self, epoch: u32) -> Result<Option<Panic>, CoreError> {
        self.close_inner(epoch).map(|(_, panic)| panic)
    }

    #[inline]
    fn close_inner(&self, epoch: u32) -> Result<(Closed, Option<Panic>), CoreError> {
        // (The same lock and check as `close`'s fast path, for a group that
        // has tasks.)
        let (g, wt) = self.lock_to_wait(epoch)?;
        let (g, panic) = match self.wait_locked(g, wt)? {
            Some(idle) => idle,
            None => return Err(CoreError::ClosedMeanwhile),
        };
        Ok((self.free(g, WorkerThread::current()), panic))
    }

    /// Unlocks the locked group and closes it at once: the next epoch
    /// (0: retired, never opened again). The slot is the caller's until it
    /// frees it (or keeps it warm): closed, in no free list.
    #[inline(always)]
    pub(super) fn shut(&self, g: Locked<'_>) -> u32 {
        let next = g.epoch.wrapping_add(1);
        let biased = g.biased;
        mem::forget(g);
        self.state.store(word(next, 0), Ordering::Release);
        if biased {
            self.bias.leave();
        }
        next
    }

    /// Closes the locked, idle group and releases what it holds; `wt` is
    /// the calling thread's worker, if it is one.
    #[inline(always)]
    pub(super) fn free(&self, mut g: Locked<'_>, wt: Option<&WorkerThread>) -> Closed {
        let inner = g.inner();
        debug_assert!(inner.idle() && inner.latches.is_empty());
        let (registry, counted, owner) = (inner.registry, inner.counted, inner.owner);
        // Kept warm only with no blocked waiter counted: a waiter woken
        // after the close does not count itself off (`Inner::blocked`), and
        // the warm open leaves the count as it is (a group closed through
        // the bias had no such waiter: blocking takes the shared lock, which
        // ends the bias). A counted group has no `warm` (`open_with`).
        let warm = inner.warm.filter(|_| inner.blocked == 0).map(|w| w.key);
        if inner.queue.capacity() > KEPT_CAPACITY {
            inner.queue = Vec::new();
        }
        let next = self.shut(g);
        if counted {
            // SAFETY: the count and keep-alive the group held.
            unsafe { release(registry) };
        } else {
            match wt {
                Some(wt) if ptr::eq(wt.info, owner) => {
                    wt.groups_open.set(wt.groups_open.get() - 1);
                    return self.keep_warm(wt, next, warm);
                }
                // Closed by another thread without adopting: counted as
                // adopted, so that the owner's exit sums up (`worker_exits`).
                _ => {
                    // SAFETY: the owner's registry is alive (see `worker_exits`).
                    unsafe { (*owner).groups_adopted.fetch_add(1, Ordering::Release) };
                }
            }
        }
        // An adopted group's owner closing it gives up its ownership too
        // (as in `keep_warm`); a close by any other thread leaves it.
        if let Some(wt) = wt {
            self.give_up(wt.info as usize);
        }
        if next == 0 {
            Closed::Retired
        } else {
            Closed::Free
        }
    }
}
