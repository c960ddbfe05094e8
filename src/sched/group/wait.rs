//! A wait for a group: the deadlock check before it (`walk.rs`), then
//! the loop that runs the group's queue as batches and, when only work
//! elsewhere is left, waits for a change (see `README.md` beside the
//! scheduler, section 7). The group's state word and its other
//! operations are in `core.rs`.

use std::{mem, ptr};

use super::batch::run_batch;
use super::core::{lock, CoreError, GroupCore, Locked, Panic, WaiterLatch, KEPT_CAPACITY};
use super::frame::FramePtr;
use super::pool_ref::adopt;
use super::walk;
use super::WouldDeadlock;
use crate::sched::latch::WorkerLatch;
use crate::sched::worker::WorkerThread;

impl GroupCore {
    /// The start of a wait for the group open under `epoch`: refuses it
    /// if it could never end (`walk.rs`), else takes the lock. Returns the
    /// caller's worker, if it is one.
    ///
    /// A group none of whose tasks runs (no batch, nothing started from
    /// outside the pool: the usual wait, right after the spawns) has no
    /// frame or node anywhere that a walk could find, so the lock is taken
    /// first and, then, nothing is walked. Otherwise the check comes before
    /// anything changes (but the owner's bias, which taking the lock first
    /// may have revoked: invisible but for the speed of the owner's later
    /// calls), so a refused wait leaves the group as it was (it runs none
    /// of its queued tasks), and without the lock: it reads only
    /// frames and nodes that cannot change while the caller waits, nothing
    /// the lock guards. A wait it refuses could never end, so the group is
    /// busy, under the epoch it has now, from before the call until after
    /// it: an epoch that is not that one is the caller's error (`Dead`), as
    /// it would be under the lock.
    #[inline]
    pub(super) fn lock_to_wait(
        &self,
        epoch: u32,
    ) -> Result<(Locked<'_>, Option<&'static WorkerThread>), CoreError> {
        let Some(wt) = WorkerThread::current() else {
            return Ok((self.lock_as(epoch, None)?, None));
        };
        let mut g = self.lock_as(epoch, Some(wt))?;
        if g.inner().batches == 0 && g.inner().started == 0 {
            return Ok((g, Some(wt)));
        }
        drop(g);
        if let Some(why) = walk::stacked(wt, self) {
            return Err(self.refused(epoch, why));
        }
        Ok((self.lock_as(epoch, Some(wt))?, Some(wt)))
    }

    #[cold]
    #[inline(never)]
    fn refused(&self, epoch: u32, why: WouldDeadlock) -> CoreError {
        if self.epoch() == Some(epoch) {
            CoreError::WouldDeadlock(why)
        } else {
            CoreError::Dead
        }
    }

    /// The loop of a wait, from the lock (taken by [`lock_to_wait`], whose
    /// check `wt`, the caller's worker if any, passed): `Some((lock,
    /// panic))` once the group is idle, `None` if another thread closed it
    /// meanwhile (which it does only once the group is idle).
    ///
    /// [`lock_to_wait`]: Self::lock_to_wait
    pub(super) fn wait_locked<'a>(
        &'a self,
        mut g: Locked<'a>,
        wt: Option<&WorkerThread>,
    ) -> Result<Option<(Locked<'a>, Option<Panic>)>, CoreError> {
        if g.inner().idle() {
            let panic = g.inner().panic.take();
            return Ok(Some((g, panic)));
        }
        let epoch = g.epoch;
        {
            let inner = g.inner();
            if !inner.counted && wt.is_none_or(|wt| !ptr::eq(wt.info, inner.owner)) {
                adopt(inner)?;
            }
        }
        let here = wt.map_or(FramePtr(ptr::null()), FramePtr::of);
        loop {
            let inner = g.inner();
            if !inner.queue.is_empty() {
                let mut batch = mem::take(&mut inner.queue);
                inner.batches += 1;
                let registry = inner.registry;
                drop(g);
                // Counts the batch done if it unwinds (it catches the
                // tasks' panics, so only a bug of terroir's would).
                struct BatchDone<'a>(&'a GroupCore, u32);
                impl Drop for BatchDone<'_> {
                    fn drop(&mut self) {
                        let mut g = self.0.relock(self.1);
                        g.inner().batches -= 1;
                        self.0.wake_waiters(g.inner());
                    }
                }
                let done = BatchDone(self, epoch);
                let panic = run_batch(self, registry, &mut batch, here);
                mem::forget(done);
                g = self.relock(epoch);
                let inner = g.inner();
                inner.batches -= 1;
                let lost = panic.and_then(|p| inner.keep_panic(p));
                // The batch's capacity serves the next spawns.
                if inner.queue.capacity() == 0 && batch.capacity() <= KEPT_CAPACITY {
                    batch.clear();
                    inner.queue = batch;
                }
                self.wake_waiters(inner);
                if lost.is_some() {
                    // Dropped with the lock let go (see `keep_panic`).
                    drop(g);
                    drop(lost);
                    g = self.relock(epoch);
                }
                continue;
            }
            if inner.idle() {
                let panic = inner.panic.take();
                return Ok(Some((g, panic)));
            }
            // A worker (of any pool) runs other work while it waits: it
            // might be the very worker that a task of the group is placed
            // on.
            if let Some(wt) = wt {
                let latch = WorkerLatch::new(wt, true);
                inner.latches.push(WaiterLatch(&latch));
                drop(g);
                /// Takes the latch off the list if the wait unwinds before
                /// the latch was set (the latch is about to be freed).
                struct Unlist<'a>(&'a GroupCore, u32, *const WorkerLatch);
                impl Drop for Unlist<'_> {
                    fn drop(&mut self) {
                        if let Ok(mut g) = self.0.lock(self.1) {
                            g.inner().latches.retain(|l| !ptr::eq(l.0, self.2));
                        }
                    }
                }
                let unlist = Unlist(self, epoch, &latch);
                wt.wait_until(&latch);
                mem::forget(unlist);
                match self.lock(epoch) {
                    Ok(again) => g = again,
                    Err(_) => return Ok(None),
                }
                continue;
            }
            inner.blocked += 1;
            // Lock order: the group's lock, then `sleep`, held from before
            // the lock is let go until the wait lets go of it, so that a
            // waker (which takes both) cannot notify in between.
            let sleep = lock(&self.sleep);
            drop(g);
            let sleep = self.wake.wait(sleep).unwrap_or_else(|e| e.into_inner());
            drop(sleep);
            match self.lock(epoch) {
                Ok(mut again) => {
                    again.inner().blocked -= 1;
                    g = again;
                }
                Err(_) => return Ok(None),
            }
        }
    }
}
