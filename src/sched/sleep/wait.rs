//! A worker's idle loop: search (bounded), spin, yield and park, and wait
//! for a latch while running other work (see `README.md` in the parent
//! folder, section 3).

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::thread;

use super::LastLook;
use super::Wake;
use crate::sched::job::JobRef;
use crate::sched::latch::WorkerLatch;
use crate::sched::record::{self, Label};
use crate::sched::unwind::{AbortOnUnwind, WaiterOutlivesJobs};
use crate::sched::worker::{WorkerThread, ASKED};

const SPIN_ROUNDS: u32 = 64;
const YIELD_AFTER: u32 = 16;

impl WorkerThread {
    /// This worker found a job: it is busy (and, when the pool times hints,
    /// counts the job), then stops searching, in that order, so that a sleeper the
    /// hand-over wakes sees it busy (`Registry::hint_for_thief`).
    pub(in crate::sched) fn took_job(&self) {
        let info = self.info();
        info.busy.store(true, Ordering::Relaxed);
        if self.registry.time_hints {
            let n = self.jobs_taken.get().wrapping_add(1);
            self.jobs_taken.set(n);
            info.job_seq.store(n, Ordering::Relaxed);
        }
        self.stop_searching();
    }

    /// Stops counting as a searcher, if this worker did (found work, its
    /// latch was set, the pool terminates), handing over as
    /// [`Sleep::stop_searching`] says.
    fn stop_searching(&self) {
        if self.searching.replace(false) {
            self.registry.sleep.stop_searching(self.node);
        }
    }

    /// Finds a job, searching (bounded) and parking when there is none.
    /// Returns `None` when `latch` is set, or, without a latch, when the
    /// pool terminates.
    pub(in crate::sched) fn wait_for_work(&self, latch: Option<&WorkerLatch>) -> Option<JobRef> {
        let info = self.info();
        info.busy.store(false, Ordering::Relaxed);
        // A thief's request is void while this worker is idle (thieves
        // skip workers with one pending). UNWATCHED stays: this worker may
        // come back to a `join`-only phase without searching (its latch
        // set, or work found at once) while the sleepers that set it still
        // sleep.
        if info.request.load(Ordering::Relaxed) & ASKED != 0 {
            info.request.fetch_and(!ASKED, Ordering::Relaxed);
        }
        let recording = record::any_active() && self.registry.recorder().is_recording();
        if !recording {
            // Waiting since before any recording of ours (0), if one
            // starts meanwhile.
            self.rec_waiting(Some(0));
            let job = self.wait_for_work_inner(latch, None);
            self.rec_waiting(None);
            if record::any_active() && self.registry.recorder().is_recording() {
                // A recording began while we waited: idle since its start.
                self.rec_wait(self.rec_start_ns(), record::now_ns(), 0);
            }
            return job;
        }
        let start = record::now_ns();
        self.rec_waiting(Some(start));
        let search = Cell::new(0u64);
        let job = self.wait_for_work_inner(latch, Some(&search));
        self.rec_waiting(None);
        if self.registry.recorder().is_recording() {
            let from = start.max(self.rec_start_ns());
            self.rec_wait(from, record::now_ns(), search.get());
        }
        job
    }

    /// One `find_work`, its time added to `search` when recording.
    #[inline]
    fn find_work_timed(&self, search: Option<&Cell<u64>>) -> Option<JobRef> {
        match search {
            None => self.find_work(),
            Some(acc) => {
                let t = record::now_ns();
                let job = self.find_work();
                acc.set(acc.get() + record::now_ns().saturating_sub(t));
                job
            }
        }
    }

    fn wait_for_work_inner(
        &self,
        latch: Option<&WorkerLatch>,
        search: Option<&Cell<u64>>,
    ) -> Option<JobRef> {
        let reg = &*self.registry;
        let info = self.info();
        let mut rounds = 0u32;
        loop {
            if latch.is_some_and(WorkerLatch::probe) {
                // Busy first: a sleeper the hand-over wakes sees it so.
                info.busy.store(true, Ordering::Relaxed);
                self.stop_searching();
                return None;
            }
            if let Some(job) = self.find_work_timed(search) {
                self.took_job();
                return Some(job);
            }
            if latch.is_none() && reg.terminating.load(Ordering::Acquire) {
                self.stop_searching();
                return None;
            }
            self.request_work();
            if rounds == 0 && !self.searching.get() {
                self.searching.set(reg.sleep.try_start_searching());
            }
            rounds += 1;
            if (self.searching.get() || latch.is_some()) && rounds < SPIN_ROUNDS {
                if rounds < YIELD_AFTER {
                    for _ in 0..(1u32 << rounds.min(6)) {
                        std::hint::spin_loop();
                    }
                } else {
                    thread::yield_now();
                }
                continue;
            }
            let mut found = None;
            let wake = reg
                .sleep
                .park(self.index, self.searching.replace(false), || {
                    // Registered as sleeping: if that leaves nobody
                    // searching, busy workers must publish unasked.
                    self.watch_sleepers();
                    if let Some(l) = latch {
                        if !l.get_sleepy() {
                            return LastLook::StayAwake;
                        }
                    }
                    self.look_again.set(None);
                    found = self.find_work_timed(search);
                    let look = if found.is_some() {
                        LastLook::TookWork
                    } else if latch.is_none() && reg.terminating.load(Ordering::SeqCst) {
                        LastLook::StayAwake
                    } else if let Some(after) = self.look_again.take() {
                        // A hint left for its node: look again when the
                        // node's estimate could allow taking it, in case
                        // the node stays busy for longer.
                        LastLook::ParkFor(after)
                    } else {
                        LastLook::Park
                    };
                    if matches!(look, LastLook::TookWork | LastLook::StayAwake) {
                        if let Some(l) = latch {
                            l.wake_up();
                        }
                    }
                    look
                });
            if let Some(l) = latch {
                l.wake_up();
            }
            if wake == Some(Wake::AsSearcher) {
                self.searching.set(true);
            }
            if let Some(job) = found {
                self.took_job();
                return Some(job);
            }
            rounds = 0;
        }
    }

    /// Runs other work until `latch` is set.
    ///
    /// Never unwinds: the jobs that set `latch` live in the caller's frame
    /// or borrow from it, and may be running on other threads, so leaving
    /// the frame before the latch is set would free memory they use. The
    /// jobs run meanwhile catch their closures' panics; if the runtime
    /// itself unwinds here (a bug: an `expect`, a `RefCell` borrow of the
    /// recorder, an overflow check), the process aborts.
    #[inline]
    pub(crate) fn wait_until(&self, latch: &WorkerLatch) {
        if !latch.probe() {
            self.wait_until_cold(latch);
        }
    }

    #[cold]
    fn wait_until_cold(&self, latch: &WorkerLatch) {
        let abort = AbortOnUnwind::<WaiterOutlivesJobs>::arm();
        // A wait is not the waiting task's work: a frame of its own (not
        // reported) takes its time out of the task's own time.
        let framed = self.rec_push(Label::Unlabelled, false);
        while !latch.probe() {
            if let Some(job) = self.wait_for_work(Some(latch)) {
                // SAFETY: a job taken from a queue is executed once, by us.
                unsafe { self.execute(job) };
            }
        }
        if framed {
            self.rec_pop();
        }
        abort.disarm();
    }
}
