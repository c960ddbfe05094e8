//! Spawning into a group: where a spawned task starts, and the tasks
//! started from outside the pool (see `core.rs` for the state word and
//! the lock).
//!
//! - **From a task of the group that runs in a wait's batch** (the usual
//!   nested fork-join): straight into that batch (`batch.rs`), found
//!   through the task's frame, with no lock.
//! - **From another worker of the group's pool**: queued, and started by
//!   the next wait, which runs the queue as a batch on the waiting
//!   worker. The waiter runs tasks and steals others, so nested groups
//!   never block a worker (a blocked worker in a nested wait is how task
//!   libraries deadlock on small pools). Code that spawns then waits loses
//!   little: its tasks become visible to thieves at the wait rather than
//!   at the spawn.
//! - **From a thread outside the pool**: started at once as a `'static`
//!   job of the pool, counted, and also queued: the wait's batch spawns a
//!   claim for it, and whichever of the two runs first takes the task (an
//!   atomic flag), so the waiter helps with those too.
//!

use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::batch::{Queued, Started};
use super::core::{
    group_view, word, CoreError, CorePtr, GroupCore, Inner, Locked, BUSY, LIVE, OWNED,
};
use super::frame;
use super::pool_ref::adopt;
use super::task::Task;
use super::TaskGroup;
use crate::sched::place::Place;
use crate::sched::unwind::halt_unwinding;
use crate::sched::worker::WorkerThread;

impl GroupCore {
    /// Spawns the task `f` at `place` (`None`: anywhere) into the group
    /// open under `epoch` (see the module docs for where it starts). With
    /// `check`, a place the group's pool cannot honour is an error
    /// ([`CoreError::Place`]); without, such a task runs unplaced.
    ///
    /// # Errors
    /// [`CoreError::Dead`], [`CoreError::PoolGone`], [`CoreError::Place`].
    #[inline]
    pub fn spawn<F>(
        &self,
        epoch: u32,
        place: Option<Place>,
        check: bool,
        f: F,
    ) -> Result<(), CoreError>
    where
        F: FnOnce(&TaskGroup) + Send + 'static,
    {
        let wt = WorkerThread::current();
        if let Some(batch) = wt.and_then(|wt| frame::batch_of(wt, self)) {
            return self.spawn_into_batch(batch, epoch, place, check, Task::new(f));
        }
        let mut g = self.lock_as(epoch, wt)?;
        let inner = g.inner();
        if !inner.counted && wt.is_none_or(|wt| !ptr::eq(wt.info, inner.owner)) {
            adopt(inner)?;
        }
        // SAFETY: the group's pool is alive: counted, or its owner is the
        // caller (a worker of it).
        let registry = unsafe { &*inner.registry };
        if let (true, Some(place)) = (check, &place) {
            registry.check_place(place).map_err(CoreError::Place)?;
        }
        let place = place.filter(|p| !p.is_plain());
        if wt.is_some_and(|wt| ptr::eq(&**wt.registry(), registry)) {
            Queued::push(&mut inner.queue, f, place.map(Box::new));
        } else {
            self.start_now(inner, place.unwrap_or_else(Place::anywhere), Task::new(f));
        }
        if inner.blocked > 0 || !inner.latches.is_empty() {
            self.wake_waiters(inner);
        }
        Ok(())
    }

    /// [`spawn`](Self::spawn) of a task with no place by the worker that
    /// opened the group, while it holds the bias (`bias.rs`) and no batch
    /// of the group runs: queued for the next wait with plain stores only.
    /// `Err(f)` (nothing done) in every other case, for the caller to
    /// take [`spawn`](Self::spawn)'s way.
    #[inline(always)]
    pub fn spawn_here<F>(&self, epoch: u32, f: F) -> Result<(), F>
    where
        F: FnOnce(&TaskGroup) + Send + 'static,
    {
        let Some(wt) = WorkerThread::current() else {
            return Err(f);
        };
        let s = self.state.load(Ordering::Acquire);
        // `is_owner` and `enter_biased` spelled out (`wt` is a worker, so
        // its info is not 0): with them the lock's drop went out of line
        // here, 13 more instructions a spawn (callgrind, `group_cost`).
        if s & !BUSY != word(epoch, LIVE | OWNED)
            || self.owned_by.load(Ordering::Relaxed) != wt.info as usize
            || !self.bias.enter(epoch)
        {
            return Err(f);
        }
        let mut g = Locked {
            core: self,
            epoch,
            biased: true,
        };
        let inner = g.inner();
        if inner.batches != 0 {
            // The caller may be one of the batch's tasks, whose spawns go
            // to the batch (`spawn` finds it).
            return Err(f);
        }
        // The owner of a group opened for its own pool, with no batch of
        // the group running (so the caller is none of its tasks): the
        // queue, nothing to adopt, the same pool.
        Queued::push(&mut inner.queue, f, None);
        if inner.blocked > 0 || !inner.latches.is_empty() {
            self.wake_waiters(inner);
        }
        Ok(())
    }

    /// Spawns into the running `batch` of this group, for one of its tasks.
    #[cold]
    fn spawn_into_batch(
        &self,
        batch: &super::batch::Batch,
        epoch: u32,
        place: Option<Place>,
        check: bool,
        task: Task,
    ) -> Result<(), CoreError> {
        // A task of this group runs this code, so the group is busy and its
        // epoch cannot change meanwhile.
        if self.epoch() != Some(epoch) {
            return Err(CoreError::Dead);
        }
        let place = place.unwrap_or_else(Place::anywhere);
        if check {
            batch
                .registry()
                .check_place(&place)
                .map_err(CoreError::Place)?;
        }
        batch.spawn(&place, task);
        Ok(())
    }

    /// Starts a task spawned from outside the pool now, and queues it for
    /// the next wait to claim if no worker took it by then; called with the
    /// lock held.
    #[cold]
    fn start_now(&self, inner: &mut Inner, place: Place, task: Task) {
        inner.started += 1;
        let started = Arc::new(Started::new(task, place.clone()));
        Queued::push_started(&mut inner.queue, Arc::clone(&started));
        let core = CorePtr(self);
        // SAFETY: the group's pool is alive (counted: the caller adopted it).
        let registry = unsafe { &*inner.registry };
        // The group holds a keep-alive count of the pool, so the pool runs
        // this job.
        // The job counts as a placed task only if it runs the task (a wait
        // may claim it first, and runs it at its place itself).
        registry.spawn_static_claim(&place, move |placed| {
            if let Some(task) = started.take() {
                let _run = placed.begins();
                // SAFETY: the task is counted in `started`, so the group is
                // busy, and alive, until `run_started` counts it done.
                let core = unsafe { core.get() };
                core.run_started(task, None);
            }
        });
    }

    /// Runs a task started from outside the pool (in `batch` when a wait
    /// claimed it), then counts it done.
    pub(crate) fn run_started(&self, task: Task, batch: Option<&super::batch::Batch>) {
        let view = group_view(self);
        let result = halt_unwinding(|| match batch {
            Some(b) => b.run_in_frame(task, &view),
            None => super::batch::run_unbatched(self, task, &view),
        });
        let epoch = self.epoch().expect("a group with a started task is open");
        let mut g = self.relock(epoch);
        let inner = g.inner();
        inner.started -= 1;
        let lost = result.err().and_then(|p| inner.keep_panic(p));
        // Only the last one can make the group idle.
        if inner.started == 0 {
            self.wake_waiters(inner);
        }
        drop(g);
        drop(lost);
    }
}
