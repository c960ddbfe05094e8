//! Worker threads: their state, their main loop, and where an idle worker
//! looks for work (in the order of its steal plan, see `policy.rs`).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crossbeam_deque::{Injector, Steal, Stealer, Worker};

use super::group::{Entered, Frame, WarmGroups};
use super::job::{JobFifo, JobRef};
use super::join::{OfferList, PrivateList};
use super::policy::{Policy, Seat, Victim};
use super::record::{Label, Slot, WorkerRec};
use super::registry::Registry;
use super::stats::{bump, WorkerStats};
use super::thread_pool::Yield;
use super::unwind::{AbortOnUnwind, WorkerLoopRuns};
use crate::numa::CpuSet;

/// A [`WorkerInfo::request`] bit: a thief that found nothing asks this
/// worker for work.
pub(crate) const ASKED: u8 = 1;

/// A [`WorkerInfo::request`] bit: a worker registered as sleeping and
/// nobody searches (`Sleep::sleepers_unwatched`, counting that worker), so
/// no thief will ask; the next `join` publishes its oldest continuation,
/// whose push wakes a sleeper. Set on every worker by the one that parks
/// (see `WorkerThread::watch_sleepers`), so that `join`'s poll reads one
/// byte of its own instead of also decoding the shared sleep word every
/// time. Cleared only by a promotion that published something: its push
/// re-reads the live sleep state and wakes a sleeper if nobody searches.
pub(crate) const UNWATCHED: u8 = 2;

/// What other threads may touch of a worker.
pub(crate) struct WorkerInfo {
    pub(super) stealer: Stealer<JobRef>,
    /// "Please expose a continuation": [`ASKED`] set by a thief that found
    /// nothing, [`UNWATCHED`] by a worker that went to sleep leaving
    /// sleepers and no searcher. A hint only (Relaxed): the job itself is
    /// published by the deque. `join`'s poll reads this one byte.
    pub(super) request: AtomicU8,
    /// Whether the worker runs a job (and so may hold private
    /// continuations). Written only by the worker, on transitions.
    pub(super) busy: AtomicBool,
    /// How many jobs this worker has taken, when the pool times its hints
    /// (`Registry::time_hints`); written only by the worker. Thieves time
    /// how long it stays the same (`Registry::job_seen`): no clock read on
    /// the worker's side.
    pub(super) job_seq: AtomicU64,
    pub(super) seat: Seat,
    pub(super) cpu: u32,
    /// The CPUs it runs on, once its thread pinned itself (the pool pins,
    /// and this is not a calling thread adopted as worker 0): set by
    /// `ThreadBuilder::run` before the pool's `build` returns.
    pub(super) pinned_to: OnceLock<CpuSet>,
    /// Placed tasks for this worker: other workers of its node may take
    /// them, other nodes' workers as [`Registry::hint_for_thief`] says.
    pub(super) hint_inbox: Injector<JobRef>,
    /// Placed tasks only this worker may run.
    pub(super) strict_inbox: Injector<JobRef>,
    pub(super) stats: WorkerStats,
    /// Its recording buffer (see `record.rs`).
    pub(super) rec: Slot,
    /// Task groups this worker created for its own pool that another
    /// thread has since adopted or closed (`group/core.rs`).
    pub(super) groups_adopted: AtomicUsize,
}

/// The state of the worker that runs on this thread.
pub(crate) struct WorkerThread {
    pub(super) deque: Worker<JobRef>,
    /// The FIFO of this worker's global `spawn_fifo`s (their stand-ins go
    /// on `deque`).
    pub(super) fifo: JobFifo,
    /// The private `join` continuations, newest first.
    pub(super) private: PrivateList,
    /// The offers of the loop batches running on this worker, newest
    /// first (`join/offer.rs`).
    pub(super) offers: OfferList,
    pub(super) searching: Cell<bool>,
    /// Set by a look that left another node's hint for later (its node
    /// looked about to take it, [`HintSteal::Later`], or had a worker
    /// that looked free, [`HintSteal::No`]): the soonest it should look
    /// again.
    pub(super) look_again: Cell<Option<Duration>>,
    /// The clock as read during the current look at the queues (0: not
    /// read yet), for `may_take_hint`.
    pub(super) look_now: Cell<u64>,
    /// Jobs taken (the worker's `job_seq`), when the pool times hints.
    pub(super) jobs_taken: Cell<u64>,
    /// Placed tasks started, when the pool times hints (one in
    /// [`TIME_EVERY`] is timed).
    pub(super) placed_runs: Cell<u64>,
    pub(super) rng: Cell<u64>,
    pub(super) index: usize,
    pub(super) node: usize,
    /// `&registry.workers[index]`, cached for the `join` fast path.
    pub(super) info: *const WorkerInfo,
    pub(super) registry: Arc<Registry>,
    pub(super) rec: WorkerRec,
    /// The innermost task-group frame of the work running here
    /// (`group/frame.rs`): kept beside the worker, so that the one
    /// thread-local read that finds the worker finds it too.
    pub(super) group_frame: Cell<*const Frame>,
    /// The groups whose tasks or batches run on this thread's stack.
    pub(super) group_entered: Cell<*const Entered>,
    /// Task groups this worker created for its own pool without a
    /// reference to it, and has not closed (`group/core.rs`).
    pub(super) groups_open: Cell<usize>,
    /// The closed groups this worker keeps for its next opens
    /// (`group/warm.rs`), given back to their table when it is dropped
    /// (after `registry`, which the drain does not need).
    pub(super) warm_groups: WarmGroups,
}

/// Makes the thread stop being a worker when dropped (at the end of
/// [`WorkerThread::run`], returning or unwinding), before the
/// `WorkerThread` that `WORKER` points to is.
struct ClearCurrentOnDrop;

impl Drop for ClearCurrentOnDrop {
    fn drop(&mut self) {
        super::current::clear();
    }
}

/// Takes one job from an injector, retrying on contention.
#[inline]
fn steal_from(q: &Injector<JobRef>) -> Option<JobRef> {
    if q.is_empty() {
        return None;
    }
    loop {
        match q.steal() {
            Steal::Success(job) => return Some(job),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}

/// Takes one job from a worker's deque, retrying on contention.
#[inline]
fn steal_from_stealer(s: &Stealer<JobRef>) -> Option<JobRef> {
    loop {
        match s.steal() {
            Steal::Success(job) => return Some(job),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}

impl WorkerThread {
    /// The worker running on this thread, if any.
    #[inline]
    pub(crate) fn current() -> Option<&'static WorkerThread> {
        let p = super::current::get();
        // SAFETY: the thread's current worker (`current.rs`) is set to a
        // WorkerThread that lives on this thread's stack for the whole of
        // `run` and is reset before it is dropped (by `ClearCurrentOnDrop`,
        // also when `run` unwinds), or to one leaked by `adopt_current`; a
        // `'static` borrow never escapes this thread (WorkerThread is
        // !Sync).
        unsafe { p.as_ref() }
    }

    /// [`current`](Self::current) found without a thread-local read
    /// (`current.rs`), if it can be: `None` when the thread has no entry
    /// in the table, whether or not it is a worker. For the C API's fast
    /// paths, where a thread-local read is a call: they fall back to their
    /// slow paths, which ask `current`.
    #[inline(always)]
    pub(crate) fn current_by_thread_pointer() -> Option<&'static WorkerThread> {
        // SAFETY: as in `current`: the table holds a thread's worker only
        // from `current::set` to `current::clear` (`current.rs`), as the
        // thread-local does, and never null.
        super::current::find().map(|p| unsafe { &*p })
    }

    fn new(registry: Arc<Registry>, index: usize, deque: Worker<JobRef>) -> WorkerThread {
        let node = registry.workers[index].seat.node;
        WorkerThread {
            deque,
            fifo: JobFifo::new(),
            private: PrivateList::new(),
            offers: OfferList::new(),
            searching: Cell::new(false),
            look_again: Cell::new(None),
            look_now: Cell::new(0),
            jobs_taken: Cell::new(0),
            placed_runs: Cell::new(0),
            rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ ((index as u64 + 1) << 17)),
            index,
            node,
            info: &*registry.workers[index],
            registry,
            rec: WorkerRec::new(),
            group_frame: Cell::new(std::ptr::null()),
            group_entered: Cell::new(std::ptr::null()),
            groups_open: Cell::new(0),
            warm_groups: WarmGroups::new(),
        }
    }

    /// Runs worker `index` on this thread until the pool terminates: the
    /// start handler, the main loop, the exit handler. The thread is a
    /// worker only meanwhile.
    pub(super) fn run(registry: Arc<Registry>, index: usize, deque: Worker<JobRef>) {
        let wt = WorkerThread::new(registry, index, deque);
        super::current::set(&wt);
        // Declared after `wt`, so dropped before it, however `run` ends: a
        // spawn handler's thread that goes on after `run` (also after
        // catching its unwinding) must not find a worker that is gone.
        let _current = ClearCurrentOnDrop;
        let reg = Arc::clone(&wt.registry);
        if let Some(handler) = &reg.start_handler {
            reg.call_user(|| handler(index));
        }
        let abort = AbortOnUnwind::<WorkerLoopRuns>::arm();
        while let Some(job) = wt.wait_for_work(None) {
            // SAFETY: a job taken from a queue is executed once, by us.
            unsafe { wt.execute(job) };
        }
        abort.disarm();
        #[cfg(test)]
        super::unwind::hooks::fire(
            &super::unwind::hooks::PANIC_AFTER_MAIN_LOOP,
            "worker unwinds after its main loop",
        );
        if let Some(handler) = &reg.exit_handler {
            reg.call_user(|| handler(index));
        }
        // After the exit handler, which may still open groups of its own.
        super::group::worker_exits(&wt);
    }

    /// Makes the calling thread worker `index` without running a main loop
    /// (`ThreadPoolBuilder::use_current_thread`): it runs the pool's jobs
    /// only while it waits in the pool. It stays a worker for the rest of
    /// the thread's life (the worker state is leaked, as in rayon-core).
    pub(super) fn adopt_current(registry: Arc<Registry>, index: usize, deque: Worker<JobRef>) {
        debug_assert!(WorkerThread::current().is_none());
        let mut wt = WorkerThread::new(registry, index, deque);
        // Never dropped, so it could never give warm groups back.
        wt.warm_groups = WarmGroups::none();
        let wt: &'static WorkerThread = Box::leak(Box::new(wt));
        // It runs the caller's code: thieves may ask it for continuations.
        wt.info().busy.store(true, Ordering::Relaxed);
        super::current::set(wt);
    }

    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Node index of this worker.
    pub(crate) fn node_index(&self) -> usize {
        self.node
    }

    pub(crate) fn rec_state(&self) -> &WorkerRec {
        &self.rec
    }

    pub(crate) fn rec_slot(&self) -> &Slot {
        &self.info().rec
    }

    /// Runs a job taken from a queue, as a recorded task when the pool
    /// records.
    ///
    /// # Safety
    /// As [`JobRef::execute`]: the job is executed once.
    #[inline]
    pub(super) unsafe fn execute(&self, job: JobRef) {
        let framed = self.rec_push(Label::Unlabelled, true);
        // SAFETY: forwarded from the caller.
        unsafe { job.execute() };
        if framed {
            self.rec_pop();
        }
    }

    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    #[inline]
    pub(super) fn info(&self) -> &WorkerInfo {
        // SAFETY: `info` points into `self.registry.workers`, which lives as
        // long as the Arc `self.registry` and is never resized.
        unsafe { &*self.info }
    }

    /// Pushes a job on this worker's deque, where thieves can take it.
    pub(crate) fn push(&self, job: JobRef) {
        self.deque.push(job);
        self.registry.sleep.new_work(self.node);
    }

    /// Pops the newest job of this worker's own deque (the oldest with
    /// [`DequeOrder::Fifo`](super::DequeOrder::Fifo)).
    #[inline]
    pub(super) fn pop_local(&self) -> Option<JobRef> {
        self.deque.pop()
    }

    /// Queues a job in `fifo` and pushes its stand-in on this worker's
    /// deque (see [`JobFifo`]).
    ///
    /// # Safety
    /// `fifo` must outlive the stand-in's execution.
    pub(crate) unsafe fn push_fifo(&self, fifo: &JobFifo, job: JobRef) {
        // SAFETY: forwarded from the caller.
        self.push(unsafe { fifo.push(job) });
    }
    pub(crate) fn next_random(&self) -> usize {
        // xorshift64
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x as usize
    }

    /// One look at every place work could be: own deque, own inboxes,
    /// own node's strict queue, then the plan's victims in order.
    pub(super) fn find_work(&self) -> Option<JobRef> {
        if let Some(job) = self.deque.pop() {
            return Some(job);
        }
        self.look_now.set(0);
        let reg = &*self.registry;
        let me = self.info();
        let stats = &me.stats;
        for q in [
            &me.strict_inbox,
            &me.hint_inbox,
            &reg.strict_queues[self.node],
            &reg.hint_queues[self.node],
        ] {
            if let Some(job) = steal_from(q) {
                bump(&stats.jobs, 1);
                bump(&stats.from_own_queues, 1);
                return Some(job);
            }
        }
        let places = reg.policy.honours_places();
        // Only `Locality` queues hints (`StrictLocality` makes every place
        // strict), so only there may another node's be taken.
        let hints = reg.policy == Policy::Locality;
        let found = reg.plans[self.index].visit(
            || self.next_random(),
            |target| match target {
                Victim::Worker(v) => {
                    let victim = &reg.workers[v];
                    let job = steal_from_stealer(&victim.stealer).or_else(|| {
                        // A hint for a worker of my node, or one another
                        // node may take (`hint_for_thief`).
                        let node = victim.seat.node;
                        let ok = !places
                            || node == self.node
                            || (hints && self.may_take_hint(node, &victim.hint_inbox));
                        if ok {
                            steal_from(&victim.hint_inbox)
                        } else {
                            None
                        }
                    })?;
                    Some((job, Some(v), victim.seat.node))
                }
                Victim::NodeQueue(q) => steal_from(&reg.node_queues[q])
                    .or_else(|| {
                        // Hints of my node were looked at above.
                        let ok =
                            hints && q != self.node && self.may_take_hint(q, &reg.hint_queues[q]);
                        if ok {
                            steal_from(&reg.hint_queues[q])
                        } else {
                            None
                        }
                    })
                    .map(|job| (job, None, q)),
            },
        );
        let (job, victim, node) = found?;
        bump(&stats.jobs, 1);
        let counter = if node != self.node {
            &stats.steals_remote[node]
        } else {
            match victim {
                None => &stats.from_own_queues,
                Some(v) if reg.workers[v].seat.group == me.seat.group => &stats.steals_l3,
                Some(_) => &stats.steals_node,
            }
        };
        bump(counter, 1);
        if super::record::any_active() {
            self.rec_steal(victim, node);
        }
        Some(job)
    }
    /// Runs one job from anywhere this worker may take one (as when it is
    /// idle: its deque, its inboxes, its node's queues, then other workers
    /// in its steal order), if there is one.
    pub(crate) fn yield_now(&self) -> Yield {
        let job = self.find_work();
        self.run_yielded(job)
    }

    /// Runs one job of this worker's own: its deque, then its inboxes
    /// (broadcasts, tasks placed on it), if there is one.
    pub(crate) fn yield_local(&self) -> Yield {
        let me = self.info();
        let job = self
            .deque
            .pop()
            .or_else(|| steal_from(&me.strict_inbox))
            .or_else(|| steal_from(&me.hint_inbox));
        self.run_yielded(job)
    }

    fn run_yielded(&self, job: Option<JobRef>) -> Yield {
        let Some(job) = job else { return Yield::Idle };
        self.took_job();
        // SAFETY: a job taken from a queue is executed once, by us.
        unsafe { self.execute(job) };
        Yield::Executed
    }

    /// Whether this worker has work of its own waiting: jobs on its deque,
    /// or a `join` continuation it keeps private (which rayon-core would
    /// have on its deque).
    pub(crate) fn has_pending_tasks(&self) -> bool {
        if !self.deque.is_empty() {
            return true;
        }
        // Promoted continuations are on the deque, or taken by others; an
        // open offer is the rest of a loop whose batch runs here (rayon
        // would have split it onto the deque).
        self.private.has_private() || self.offers.oldest_open().is_some()
    }

    /// Asks the nearest busy worker without a pending request to expose a
    /// continuation.
    pub(super) fn request_work(&self) {
        let reg = &*self.registry;
        for v in reg.plans[self.index].workers_in_order() {
            let info = &reg.workers[v];
            if info.busy.load(Ordering::Relaxed)
                && info.request.load(Ordering::Relaxed) & ASKED == 0
            {
                // An RMW: an UNWATCHED bit set meanwhile stays.
                info.request.fetch_or(ASKED, Ordering::Relaxed);
                return;
            }
        }
    }

    /// Called by a worker about to sleep, after it registered as sleeping:
    /// if nobody searches now, nobody will ask the busy workers for work,
    /// so every worker gets the [`UNWATCHED`] bit and its next `join`
    /// publishes a continuation (the push wakes a sleeper, which then
    /// searches and asks as usual). Idle and sleeping workers get it too,
    /// this one included: each may come back to a `join`-only phase
    /// without searching (work found at once, a latch set, a timed park
    /// run out). A bit nobody needed costs one promotion (a push, which
    /// re-reads the live state and wakes nobody needlessly). The scan
    /// reads one byte per worker, and writes only bits not yet set.
    pub(in crate::sched) fn watch_sleepers(&self) {
        let reg = &*self.registry;
        if !reg.sleep.sleepers_unwatched() {
            return;
        }
        for info in reg.workers.iter() {
            if info.request.load(Ordering::Relaxed) & UNWATCHED == 0 {
                info.request.fetch_or(UNWATCHED, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::Duration;

    use super::{WorkerThread, ASKED, UNWATCHED};

    /// A pool of two unpinned workers.
    fn two_workers() -> crate::ThreadPool {
        crate::sched::test_pool(2)
    }

    /// Waits (up to ten seconds: a loaded machine may keep it spinning
    /// and yielding for long) until the other worker of a two-worker
    /// pool sleeps.
    fn until_the_other_sleeps(wt: &WorkerThread) {
        let slept = (0..2000).find(|_| {
            std::thread::sleep(Duration::from_millis(5));
            wt.registry.sleep.counts().1 == 1
        });
        assert!(slept.is_some(), "the other worker never went to sleep");
    }

    /// A `join` of two 100 ms halves: the workers that ran them.
    fn two_slow_halves() -> (Option<usize>, Option<usize>) {
        let half = || {
            std::thread::sleep(Duration::from_millis(100));
            crate::current_thread_index()
        };
        crate::join(half, half)
    }

    /// A worker that goes to sleep leaving nobody searching marks the
    /// other workers [`UNWATCHED`], and the next `join` publishes its
    /// continuation, which wakes the sleeper. The thief's own request
    /// ([`ASKED`]) is cleared here, as a `promote` with nothing to publish
    /// would: without the bit (or with `poll` reading `ASKED` only) both
    /// halves run on this worker.
    #[test]
    fn a_join_after_the_last_searcher_parked_wakes_it() {
        let pool = two_workers();
        let (bits, a, b) = pool.install(|| {
            let wt = WorkerThread::current().expect("a worker");
            // Long enough for the other worker to stop searching and park.
            until_the_other_sleeps(wt);
            let request = &wt.info().request;
            request.fetch_and(!ASKED, Ordering::Relaxed);
            let bits = request.load(Ordering::Relaxed);
            let (a, b) = two_slow_halves();
            (bits, a, b)
        });
        assert_eq!(bits, UNWATCHED, "the parked worker left no UNWATCHED bit");
        assert_ne!(a, b, "both halves of the join ran on worker {a:?}");
    }

    /// The bit survives an idle spell of its own worker: after the other
    /// worker parked, this one waits for an external event (it goes idle,
    /// searches, parks, and is woken for its latch, never stealing), then
    /// runs a `join`. Failed (both halves here) while going idle cleared
    /// the bit and a parking worker set it on the others only (review of
    /// the first version).
    #[test]
    fn the_bit_survives_a_wait_for_an_external_event() {
        let pool = two_workers();
        let (a, b) = pool.install(|| {
            let wt = WorkerThread::current().expect("a worker");
            until_the_other_sleeps(wt);
            let event = Arc::new(crate::sched::ExternalEvent::new());
            let setter = {
                let event = Arc::clone(&event);
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(50));
                    event.set();
                })
            };
            event.wait();
            setter.join().expect("the setter");
            two_slow_halves()
        });
        assert_ne!(a, b, "both halves of the join ran on worker {a:?}");
    }
}
