//! The private-continuation list of `join`: continuations stay private to
//! their worker until a thief asks, then the oldest is promoted to the
//! worker's deque (see `README.md` beside this file, section 1).

use std::cell::Cell;
use std::sync::atomic::Ordering;

use super::offer::{older, OfferFrame};
use crate::sched::job::JobRef;
use crate::sched::worker::{WorkerThread, ASKED};

/// A `join` continuation kept private to its worker: a node of an intrusive
/// list through the stack frames of the pending `join`s, newest first.
/// Only the owning worker reads or writes it.
pub(crate) struct PrivateJob {
    prev: *const PrivateJob,
    job: JobRef,
    promoted: Cell<bool>,
}

impl PrivateJob {
    /// A node for `job`; link it with [`WorkerThread::push_private`].
    #[inline(always)]
    pub(crate) fn new(job: JobRef) -> Self {
        PrivateJob {
            prev: std::ptr::null(),
            job,
            promoted: Cell::new(false),
        }
    }

    /// Whether the job was promoted to the deque (then another worker may
    /// be running it: wait for its latch).
    #[inline(always)]
    pub(crate) fn was_promoted(&self) -> bool {
        self.promoted.get()
    }
}

/// The list of a worker's private continuations (head: the newest), a
/// stack that follows the worker's call stack. Apart from
/// [`WorkerThread`] so that its pointer handling can be tested on its own
/// (under Miri too, where a worker cannot start: see the tests below).
pub(crate) struct PrivateList {
    head: Cell<*const PrivateJob>,
    /// How many linked nodes are still private (not promoted): `join`
    /// runs its closures as plain calls, with no node, once this reaches
    /// [`ELIDE_AT`](super::ELIDE_AT).
    private: Cell<usize>,
}

impl PrivateList {
    /// An empty list.
    #[inline(always)]
    pub(crate) const fn new() -> Self {
        PrivateList {
            head: Cell::new(std::ptr::null()),
            private: Cell::new(0),
        }
    }

    /// How many linked nodes are still private.
    #[inline(always)]
    pub(crate) fn private_len(&self) -> usize {
        self.private.get()
    }

    /// Links `node` as the newest private continuation. It must stay in
    /// place until [`pop`](Self::pop) unlinks it.
    #[inline(always)]
    pub(crate) fn push(&self, node: &mut PrivateJob) {
        debug_assert!(!node.promoted.get(), "a promoted node linked again");
        node.prev = self.head.get();
        self.head.set(node);
        self.private.set(self.private.get() + 1);
    }

    /// Unlinks `node`, the newest private continuation (see
    /// [`WorkerThread::pop_private`] for why it is the newest).
    #[inline(always)]
    pub(crate) fn pop(&self, node: &PrivateJob) {
        if cfg!(debug_assertions) && !std::ptr::eq(self.head.get(), node) {
            private_list_broken();
        }
        self.head.set(node.prev);
        // A promoted node was counted out when it was promoted.
        self.private
            .set(self.private.get() - usize::from(!node.promoted.get()));
    }

    /// Whether any linked node is still private (promoted nodes are the
    /// oldest end of the list: this is whether the newest is).
    #[inline]
    pub(crate) fn has_private(&self) -> bool {
        self.private.get() != 0
    }

    /// Marks the oldest node that is still private as promoted and returns
    /// its job, for the caller to publish; `None` when all are promoted.
    #[inline]
    #[cfg(test)]
    pub(crate) fn promote_oldest(&self) -> Option<JobRef> {
        let node = self.oldest_private()?;
        self.mark_promoted(node);
        Some(node.job)
    }

    /// Marks `node`, a linked node that is still private, as promoted.
    #[inline]
    pub(crate) fn mark_promoted(&self, node: &PrivateJob) {
        debug_assert!(!node.promoted.get(), "a node promoted twice");
        node.promoted.set(true);
        self.private.set(self.private.get() - 1);
    }

    /// The oldest node that is still private, if any.
    #[inline]
    pub(crate) fn oldest_private(&self) -> Option<&PrivateJob> {
        // Promoted nodes form the oldest end of the list: walk to the
        // oldest one that is still private.
        let mut oldest: Option<&PrivateJob> = None;
        let mut p = self.head.get();
        // SAFETY: every node of the list lives in the frame of a `join` of
        // this thread that has not returned (it unlinks its node first).
        while let Some(node) = unsafe { p.as_ref() } {
            if node.promoted.get() {
                break;
            }
            oldest = Some(node);
            p = node.prev;
        }
        oldest
    }
}

impl WorkerThread {
    /// Links `node` as the newest private continuation. It must stay in
    /// place until [`WorkerThread::pop_private`] unlinks it.
    #[inline(always)]
    pub(crate) fn push_private(&self, node: &mut PrivateJob) {
        self.private.push(node);
    }

    /// Unlinks `node`, the newest private continuation.
    ///
    /// `node` is always the newest: each `join` links one node and unlinks
    /// it before its frame ends, on both of its paths (after `oper_a`
    /// returns, or in its drop guard when `oper_a` or `poll` unwinds, the
    /// guard being armed right after the link). Between the two, this
    /// thread runs only code called from that frame, so every `join` it
    /// starts meanwhile ends, unlinking its own node, first: the list is
    /// a stack that follows the call stack. Two things could break that,
    /// and both already are undefined behaviour for Rust frames: ending a
    /// frame without returning or unwinding (`longjmp` or a forced unwind
    /// such as `pthread_exit` through it), and a stackful coroutine
    /// library that suspends a `join` and lets this thread start another
    /// one before resuming it (two call stacks interleaved on one thread).
    ///
    /// So release builds do not check it: the check costs two instructions
    /// per `join` (+3 % on an empty one; `README.md` §8 has the count).
    /// Debug builds check it and *abort*: a panic here could unwind this
    /// `join`'s frame while a thief runs its promoted `b`.
    #[inline(always)]
    pub(crate) fn pop_private(&self, node: &PrivateJob) {
        self.private.pop(node);
    }

    /// Serves a thief's request, if any, by promoting the oldest private
    /// continuation to the deque. Also promotes when workers sleep and none
    /// searches (the [`UNWATCHED`](crate::sched::worker::UNWATCHED) bit,
    /// set by the last worker to go to sleep): sleeping workers make no
    /// requests, so without this a `join`-only phase that follows an idle
    /// one would never wake them (the push wakes one, which then searches
    /// and requests as usual). One load of this worker's own byte.
    #[inline(always)]
    pub(crate) fn poll(&self) {
        if self.info().request.load(Ordering::Relaxed) != 0 {
            let _ = self.promote();
        }
    }

    /// Publishes the oldest work this worker keeps back: its oldest
    /// private continuation or the oldest open offer of a running loop
    /// batch (`offer.rs`), whichever is older; returns whether it
    /// published something. Clears the `request` byte if it did, and the
    /// thief's bit only if it did not.
    #[cold]
    #[inline(never)]
    pub(super) fn promote(&self) -> bool {
        let published = self.promote_oldest();
        let request = &self.info().request;
        if published {
            // The push did what either bit asked for (it wakes a sleeper
            // if nobody searches). A bit set since is lost, and harmless:
            // a thief asks again every round, and a worker that goes to
            // sleep after this push finds the pool watched or sets the
            // bit anew.
            request.store(0, Ordering::Relaxed);
        } else {
            // Nothing to publish: the thief's request is answered (it asks
            // again); the sleepers still wait for this worker's next
            // `join` with something to publish.
            request.fetch_and(!ASKED, Ordering::Relaxed);
        }
        published
    }

    /// The work of [`promote`](Self::promote): publishes the oldest work
    /// kept back, if any.
    #[inline(always)]
    fn promote_oldest(&self) -> bool {
        loop {
            let node = self.private.oldest_private();
            let offer = self.offers.oldest_open();
            let offer_first = match (node, offer) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(n), Some(o)) => older(
                    o as *const OfferFrame as *const (),
                    n as *const PrivateJob as *const (),
                ),
            };
            if offer_first {
                let offer = offer.expect("an offer");
                match offer.split() {
                    Some(job) => {
                        self.push(job);
                        return true;
                    }
                    // Too small to split (and now closed): the next one.
                    None => continue,
                }
            }
            let Some(node) = node else { return false };
            self.private.mark_promoted(node);
            self.push(node.job);
            #[cfg(test)]
            crate::sched::unwind::hooks::fire(
                &crate::sched::unwind::hooks::PANIC_IN_PROMOTE,
                "promote unwinds after publishing a continuation",
            );
            return true;
        }
    }
}

/// The private list was unlinked out of order (see
/// [`WorkerThread::pop_private`]): its nodes may now point into frames
/// that are gone, and `promote` would follow them.
#[cold]
#[inline(never)]
fn private_list_broken() -> ! {
    crate::sched::unwind::abort_with(
        "private join continuations unlinked out of order \
         (a `join` frame ended without unlinking its node)",
    )
}

/// The list on its own, with plain threads in the place of thieves: no
/// worker, so no system call, and so under Miri too (`scripts/miri.sh`),
/// which checks the pointer handling through the `join` frames and that a
/// promoted job's result reaches its owner through the latch.
#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use crate::sched::job::StackJob;
    use crate::sched::latch::LockLatch;

    /// What a thief does with a promoted job: runs it on another thread.
    struct Thief {
        jobs: Option<mpsc::Sender<JobRef>>,
        thread: Option<std::thread::JoinHandle<usize>>,
    }

    impl Thief {
        fn start() -> Thief {
            let (tx, rx) = mpsc::channel::<JobRef>();
            let thread = std::thread::spawn(move || {
                let mut ran = 0;
                for job in rx {
                    // SAFETY: each promoted job is sent once, and its owner
                    // keeps it alive until its latch is set.
                    unsafe { job.execute() };
                    ran += 1;
                }
                ran
            });
            Thief {
                jobs: Some(tx),
                thread: Some(thread),
            }
        }

        fn steal(&self, job: JobRef) {
            self.jobs.as_ref().unwrap().send(job).unwrap();
        }

        fn stop(mut self) -> usize {
            drop(self.jobs.take());
            self.thread.take().unwrap().join().unwrap()
        }
    }

    /// `join`'s shape on `list`: link `b`'s node, maybe promote the oldest
    /// private node to `thief` (`promote_at` counts down the calls), run
    /// `a` (which recurses), unlink, and run `b` here or wait for it.
    fn join_like(list: &PrivateList, thief: &Thief, depth: u32, promote_at: &Cell<u32>) -> u64 {
        if depth == 0 {
            return 1;
        }
        let job_b = StackJob::new(
            |_stolen: bool| u64::from(depth) * 1000,
            LockLatch::default(),
        );
        let mut node = PrivateJob::new(job_b.as_job_ref());
        list.push(&mut node);
        let n = promote_at.get();
        promote_at.set(n.wrapping_sub(1));
        if n == 0 {
            let job = list.promote_oldest().expect("a private node to promote");
            thief.steal(job);
        }
        let ra = join_like(list, thief, depth - 1, promote_at);
        list.pop(&node);
        let rb = if node.was_promoted() {
            job_b.latch.wait_and_reset();
            job_b.into_result()
        } else {
            job_b.run_inline(false)
        };
        ra + rb
    }

    #[test]
    fn promotes_oldest_first_and_unlinks_newest_first() {
        let jobs: Vec<_> = (0..3)
            .map(|i| StackJob::new(move |_: bool| i, LockLatch::default()))
            .collect();
        let list = PrivateList::new();
        assert!(!list.has_private());
        assert!(list.promote_oldest().is_none());
        // One `JobRef` per job, compared with what the list gives back: two
        // `as_job_ref` calls may give different function addresses for the
        // same function (Miri makes them differ; `JobRef::same`'s caller in
        // `join_context` compares copies of one value, as here).
        let refs: Vec<_> = jobs.iter().map(|j| j.as_job_ref()).collect();
        let mut nodes: Vec<_> = refs.iter().map(|&r| PrivateJob::new(r)).collect();
        for (i, node) in nodes.iter_mut().enumerate() {
            list.push(node);
            assert_eq!(list.private_len(), i + 1);
        }
        assert!(list.has_private());
        for (i, &job) in refs.iter().enumerate() {
            let promoted = list.promote_oldest().expect("a private node");
            assert!(JobRef::same(promoted, job), "node {i}");
            assert!(nodes[i].was_promoted());
            assert_eq!(list.private_len(), 2 - i, "promoted nodes are counted out");
        }
        assert!(list.promote_oldest().is_none());
        assert!(!list.has_private());
        for node in nodes.iter().rev() {
            list.pop(node);
            assert_eq!(
                list.private_len(),
                0,
                "a promoted node's pop counts nothing"
            );
        }
        assert!(!list.has_private());
        // A node linked after promotions is private again, and found
        // before the promoted ones' end.
        let mut early = PrivateJob::new(refs[0]);
        list.push(&mut early);
        assert!(list.promote_oldest().is_some());
        let mut late = PrivateJob::new(refs[0]);
        list.push(&mut late);
        assert!(list.has_private());
        assert_eq!(list.private_len(), 1);
        assert!(list.promote_oldest().is_some());
        assert!(late.was_promoted() && early.was_promoted());
        assert_eq!(list.private_len(), 0);
        list.pop(&late);
        list.pop(&early);
        assert_eq!(list.private_len(), 0);
        // Private nodes popped unpromoted count themselves out.
        let (mut x, mut y) = (PrivateJob::new(refs[1]), PrivateJob::new(refs[2]));
        list.push(&mut x);
        list.push(&mut y);
        assert_eq!(list.private_len(), 2);
        list.pop(&y);
        assert_eq!(list.private_len(), 1);
        list.pop(&x);
        assert_eq!(list.private_len(), 0);
        for job in &jobs {
            assert!(job.run_inline(false) < 3);
        }
    }

    #[test]
    fn promoted_continuations_run_elsewhere_while_their_frames_wait() {
        let depth = if cfg!(miri) { 6 } else { 40 };
        let expected: u64 = 1 + (1..=u64::from(depth)).map(|d| d * 1000).sum::<u64>();
        for promote_at in [0, 1, depth / 2, depth - 1, u32::MAX] {
            let thief = Thief::start();
            let list = PrivateList::new();
            let sum = join_like(&list, &thief, depth, &Cell::new(promote_at));
            assert_eq!(sum, expected, "promoting at call {promote_at}");
            assert!(!list.has_private());
            assert_eq!(thief.stop(), usize::from(promote_at < depth));
        }
    }

    #[test]
    fn every_frame_promoted_in_turn() {
        // Promote at every call: each promotion takes the oldest node that
        // is still private, so all `depth` nodes go to the thief.
        fn all(list: &PrivateList, thief: &Thief, depth: u32) -> u64 {
            if depth == 0 {
                return 0;
            }
            let job_b = StackJob::new(move |_: bool| u64::from(depth), LockLatch::default());
            let mut node = PrivateJob::new(job_b.as_job_ref());
            list.push(&mut node);
            thief.steal(list.promote_oldest().expect("the node just linked"));
            let ra = all(list, thief, depth - 1);
            list.pop(&node);
            assert!(node.was_promoted());
            job_b.latch.wait_and_reset();
            ra + job_b.into_result()
        }
        let depth = if cfg!(miri) { 5 } else { 30 };
        let thief = Thief::start();
        let list = PrivateList::new();
        assert_eq!(
            all(&list, &thief, depth),
            u64::from(depth * (depth + 1) / 2)
        );
        assert_eq!(thief.stop(), depth as usize);
    }
}
