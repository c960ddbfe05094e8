//! The two hooks of the loop layer (`crate::iter`, README §9): a running
//! loop asks at each of its poll points whether to split
//! ([`WorkerThread::split_wanted`]), and hands the other half over with
//! [`join_to`], which publishes it at once (on the deque, or where a place
//! routes it) instead of keeping it private as [`join`](super::join) does.

use std::sync::atomic::Ordering;

use crate::sched::job::StackJob;
use crate::sched::latch::WorkerLatch;
use crate::sched::place::Place;
use crate::sched::route::{PlacedTask, Route};
use crate::sched::stats::bump;
use crate::sched::worker::{WorkerThread, ASKED};

/// Where [`join_to`] sends its second closure.
#[derive(Clone, Copy, Debug)]
pub(crate) enum To<'p> {
    /// The calling worker's deque, where any thief may take it (as a
    /// promoted `join` continuation).
    Deque,
    /// Where [`Scope::spawn_on`](crate::Scope::spawn_on) would send a task
    /// placed at the place: its node's queue, as a hint or strictly, under
    /// the `Locality` policies; the deque under the others. Unlike a
    /// spawn, a node's task goes to the node's own queue whatever the
    /// pool's [`Distribution`](crate::Distribution): a loop's share is
    /// split further by whichever worker of the node runs it, and must not
    /// wait in one worker's inbox (a worker blocked outside the pool would
    /// hold it there). Its declared data counts in the statistics under
    /// every policy.
    Place(&'p Place),
    /// Worker `w`'s strict inbox whatever the policy (static schedules:
    /// the same worker every time), counting the place's data, if any, in
    /// the statistics.
    Worker(usize, Option<&'p Place>),
    /// The calling worker's node's strict queue whatever the policy,
    /// counting the place's data in the statistics: a piece of a placed
    /// loop's share for an idle worker of the node where the share runs.
    /// Every worker of the node looks there, the caller too while it
    /// waits.
    OwnNode(&'p Place),
}

impl WorkerThread {
    /// Whether a loop running on this worker should split off work now:
    /// a thief asked (`request`), or, when `long` (the loop has run long
    /// enough to pay for a wake-up), workers sleep and none searches. One
    /// Relaxed load on the common path (two when `long`).
    ///
    /// A private `join` continuation older than the loop goes first: then
    /// it is promoted (as [`poll`](Self::poll) would) and the answer is
    /// `false`. Either way the request is consumed.
    #[inline(always)]
    pub(crate) fn split_wanted(&self, long: bool) -> bool {
        // Only a thief's request: a loop that is not long leaves sleepers
        // asleep (waking one costs more than such a loop gains), so the
        // UNWATCHED bit waits for the next `join` or a long loop's check.
        let asked = self.info().request.load(Ordering::Relaxed) & ASKED != 0;
        if !(asked || (long && self.registry.sleep.sleepers_unwatched())) {
            return false;
        }
        self.split_wanted_cold()
    }

    #[cold]
    #[inline(never)]
    fn split_wanted_cold(&self) -> bool {
        // Nothing promoted: the loop splits, unless a placed share finds
        // no idle worker of its node. An UNWATCHED bit stays either way
        // (at worst one promotion more at the next `join`).
        !self.promote()
    }

    /// Adds `bytes` of declared data, `local` of them on this worker's
    /// node, to its statistics (the locality ratio): a loop over placed
    /// data counts what each worker processed, batch by batch.
    pub(crate) fn count_data(&self, bytes: u64, local: u64) {
        let stats = &self.info().stats;
        bump(&stats.declared_bytes, bytes);
        bump(&stats.local_bytes, local);
    }

    /// Whether another worker of this worker's node is idle (looking for
    /// work, or asleep): a placed loop splits only for those, so that the
    /// half it gives away stays on its node.
    pub(crate) fn node_has_idle_peer(&self) -> bool {
        let reg = &*self.registry;
        reg.node_workers[self.node]
            .iter()
            .any(|&w| w != self.index && !reg.workers[w].busy.load(Ordering::Relaxed))
    }
}

/// Runs `oper_a` on `wt` (the calling thread's worker, so `oper_a` need
/// not be `Send`) and `oper_b`
/// wherever `to` sends it, and returns both results once both are done.
/// Unlike [`join`](super::join), `oper_b` is published before `oper_a`
/// starts: the caller splits because someone is waiting for work. If
/// nobody takes `oper_b`, `wt` runs it itself while it waits (it finds it
/// on its own deque, inboxes or node queue).
///
/// # Panics
/// As `join`: a panic of either closure propagates after both finished
/// (`oper_a`'s wins).
pub(crate) fn join_to<A, B, RA, RB>(wt: &WorkerThread, to: To<'_>, oper_a: A, oper_b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    let reg = &*wt.registry;
    let (route, task) = match to {
        To::Deque => (Route::Unplaced, None),
        To::OwnNode(place) => (
            Route::Node {
                node: wt.node,
                strict: true,
            },
            Some(PlacedTask::of(place)),
        ),
        To::Place(place) => (reg.route(place, Some(wt)), Some(PlacedTask::of(place))),
        To::Worker(worker, place) => {
            debug_assert!(worker < reg.workers.len(), "worker {worker} out of range");
            (
                Route::Worker {
                    worker,
                    strict: true,
                },
                place.map(PlacedTask::of),
            )
        }
    };
    let job_b = StackJob::new(
        move |_| {
            let _run = task.as_ref().map(PlacedTask::begins);
            oper_b()
        },
        WorkerLatch::new(wt, false),
    );
    // To the route as it stands: a node's queue, not a worker's inbox
    // (see `To::Place`).
    reg.deliver(route, job_b.as_job_ref(), Some(wt));
    // If `oper_a` unwinds, `oper_b` (which may borrow the same frames) must
    // finish first.
    let guard = WaitGuard {
        wt,
        latch: &job_b.latch,
    };
    let ra = oper_a();
    std::mem::forget(guard);
    wt.wait_until(&job_b.latch);
    (ra, job_b.into_result())
}

/// Waits for a published job's latch when dropped: armed while the other
/// half runs, so that a half that unwinds cannot end the frame the
/// published one borrows from (`join_to`, `join_context`, `offer_during`).
pub(super) struct WaitGuard<'a> {
    pub(super) wt: &'a WorkerThread,
    pub(super) latch: &'a WorkerLatch,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        self.wt.wait_until(self.latch);
    }
}
