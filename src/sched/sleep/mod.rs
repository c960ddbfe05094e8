//! Idle workers: bounded searching, parking, and waking.
//!
//! The protocol (with the race it avoids) is walked through in `README.md`
//! beside this file. In short: one atomic word counts searching and sleeping
//! workers; a producer publishes work, issues a SeqCst fence and reads the
//! word; a worker about to park registers (under the idle-list mutex, with a
//! SeqCst read-modify-write of the word) and then looks at every queue once
//! more. One of the two always sees the other.

#[cfg(all(test, loom))]
mod loom;
mod wait;

use std::time::{Duration, Instant};

use super::sync::{fence, AtomicU64, Condvar, Mutex, MutexGuard, Ordering};

const ONE_SEARCHING: u64 = 1;
const ONE_SLEEPING: u64 = 1 << 32;

fn searching(state: u64) -> u64 {
    state & 0xffff_ffff
}

fn sleeping(state: u64) -> u64 {
    state >> 32
}

/// How a parked worker was woken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// For new work: the waker counted the worker as searching.
    AsSearcher,
    /// For something else (its latch was set, termination): not counted.
    Plain,
}

#[derive(Default)]
struct ParkState {
    notified: bool,
    as_searcher: bool,
}

/// One worker's place to park.
#[derive(Default)]
struct Parker {
    state: Mutex<ParkState>,
    cv: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks cannot leave their data half-written
    // (plain flag and index writes), so poisoning is ignored.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Parker {
    fn unpark(&self, wake: Wake) {
        let mut s = lock(&self.state);
        s.notified = true;
        s.as_searcher |= wake == Wake::AsSearcher;
        self.cv.notify_one();
    }

    fn park(&self) -> Wake {
        self.park_until(None)
            .expect("a park without a deadline ends woken")
    }

    /// Waits for an unpark, or until `deadline`: `None` when it passed
    /// first (the unpark, if one comes later, stays pending).
    fn park_until(&self, deadline: Option<Instant>) -> Option<Wake> {
        let mut s = lock(&self.state);
        while !s.notified {
            match deadline {
                None => s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return None;
                    }
                    s = self
                        .cv
                        .wait_timeout(s, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
        s.notified = false;
        Some(if std::mem::take(&mut s.as_searcher) {
            Wake::AsSearcher
        } else {
            Wake::Plain
        })
    }
}

/// What a worker about to park saw in its last look at the queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LastLook {
    /// Nothing: park.
    Park,
    /// Nothing it may take now, but a placed task it left for its node
    /// may become its to take: park for at most this long, then look
    /// again.
    ParkFor(Duration),
    /// It took a job: stay awake and run it.
    TookWork,
    /// Another reason to stay awake (its latch was set, termination).
    StayAwake,
}

/// The sleep state of a pool.
pub(crate) struct Sleep {
    /// Low 32 bits: searching workers; high 32 bits: sleeping workers.
    state: AtomicU64,
    /// Sleeping workers by node index; the source of truth for who sleeps.
    idle: Mutex<Vec<Vec<usize>>>,
    parkers: Vec<Parker>,
    worker_node: Vec<usize>,
}

impl Sleep {
    pub(crate) fn new(worker_node: Vec<usize>, nodes: usize) -> Sleep {
        Sleep {
            state: AtomicU64::new(0),
            idle: Mutex::new(vec![Vec::new(); nodes]),
            parkers: worker_node.iter().map(|_| Parker::default()).collect(),
            worker_node,
        }
    }

    /// Becomes a searcher if fewer than half of the workers (at least one)
    /// are searching.
    pub(crate) fn try_start_searching(&self) -> bool {
        let limit = (self.parkers.len() as u64).div_ceil(2).max(1);
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if searching(s) >= limit {
                return false;
            }
            match self.state.compare_exchange_weak(
                s,
                s + ONE_SEARCHING,
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }

    /// A searcher stops searching: it found work, its latch was set, or the
    /// pool terminates. If it was the last searcher while workers sleep, it
    /// hands over and wakes one: where there was one job there may be more,
    /// and a producer may have skipped its wake-up because this worker
    /// searched (a job pushed just before a latch was set would otherwise
    /// wait for its owner, which may be waiting for it).
    pub(crate) fn stop_searching(&self, node: usize) {
        let prev = self.state.fetch_sub(ONE_SEARCHING, Ordering::SeqCst);
        debug_assert!(searching(prev) > 0);
        if searching(prev) == 1 && sleeping(prev) > 0 {
            self.wake_one(node);
        }
    }

    /// New work was published (pushed to a deque or queue) for `node`.
    ///
    /// ## Memory ordering
    /// The SeqCst fence orders the caller's push before the read of the
    /// state word; it pairs with the SeqCst read-modify-write in
    /// [`Sleep::park`] (see README.md).
    #[inline]
    pub(crate) fn new_work(&self, node: usize) {
        fence(Ordering::SeqCst);
        let s = self.state.load(Ordering::Relaxed);
        if searching(s) == 0 && sleeping(s) > 0 {
            self.wake_one(node);
        }
    }

    /// New work was published that `node`'s workers should take first (a
    /// placed task, a first-touch share), or only they may take (a strict
    /// task). Unlike [`Sleep::new_work`], a searcher elsewhere is no reason
    /// to skip the wake-up (it may not, or should not, take the task), so a
    /// sleeper of `node` is woken whenever one sleeps. When none does,
    /// every worker of `node` is awake and will look at the node's queues
    /// before it parks (the same fence pairing as `new_work`); then, if
    /// `others_may_help`, a sleeper elsewhere is woken as by `new_work`.
    #[inline]
    pub(crate) fn new_work_on_node(&self, node: usize, others_may_help: bool) {
        fence(Ordering::SeqCst);
        let s = self.state.load(Ordering::Relaxed);
        if sleeping(s) > 0 && !self.wake_one_of(node) && others_may_help && searching(s) == 0 {
            self.wake_one(node);
        }
    }

    /// New work only worker `w` may take (or should take first); returns
    /// whether `w` slept and was woken.
    #[inline]
    pub(crate) fn new_work_for_worker(&self, w: usize) -> bool {
        fence(Ordering::SeqCst);
        let s = self.state.load(Ordering::Relaxed);
        sleeping(s) > 0 && self.wake_specific(w)
    }

    /// Whether some worker sleeps while none searches: then new work must
    /// be published (and a sleeper woken) for anyone else to help. One
    /// Relaxed load; the word changes only when workers park or wake.
    #[inline(always)]
    pub(crate) fn sleepers_unwatched(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        searching(s) == 0 && sleeping(s) > 0
    }

    /// A hint for worker `w` (which others may take too) was published:
    /// wakes `w` as a searcher if it sleeps, so that it hands over when it
    /// takes the hint (as a worker woken for a node hint does), and returns
    /// whether it did.
    #[inline]
    pub(crate) fn new_hint_for_worker(&self, w: usize) -> bool {
        fence(Ordering::SeqCst);
        let s = self.state.load(Ordering::Relaxed);
        if sleeping(s) == 0 {
            return false;
        }
        let woken = self.take_off_idle(w, true);
        if woken {
            self.parkers[w].unpark(Wake::AsSearcher);
        }
        woken
    }

    /// Wakes one sleeper of `node` as a searcher, if one sleeps; returns
    /// whether one did.
    #[cold]
    fn wake_one_of(&self, node: usize) -> bool {
        let woken = {
            let mut idle = lock(&self.idle);
            let w = idle.get_mut(node).and_then(Vec::pop);
            if w.is_some() {
                self.state
                    .fetch_add(ONE_SEARCHING.wrapping_sub(ONE_SLEEPING), Ordering::SeqCst);
            }
            w
        };
        match woken {
            Some(w) => {
                self.parkers[w].unpark(Wake::AsSearcher);
                true
            }
            None => false,
        }
    }

    /// Wakes one sleeper, preferring `node`'s, as a searcher.
    #[cold]
    fn wake_one(&self, node: usize) {
        let woken = {
            let mut idle = lock(&self.idle);
            let preferred = idle.get_mut(node).and_then(Vec::pop);
            let w = preferred.or_else(|| idle.iter_mut().find_map(Vec::pop));
            if w.is_some() {
                self.state
                    .fetch_add(ONE_SEARCHING.wrapping_sub(ONE_SLEEPING), Ordering::SeqCst);
            }
            w
        };
        if let Some(w) = woken {
            self.parkers[w].unpark(Wake::AsSearcher);
        }
    }

    /// Wakes worker `w` if it sleeps (its latch was set); returns whether
    /// it did.
    pub(crate) fn wake_specific(&self, w: usize) -> bool {
        let slept = self.unregister(w);
        if slept {
            self.parkers[w].unpark(Wake::Plain);
        }
        slept
    }

    /// Wakes every sleeper (termination).
    pub(crate) fn wake_all(&self) {
        let all: Vec<usize> = {
            let mut idle = lock(&self.idle);
            let all: Vec<usize> = idle.iter_mut().flat_map(std::mem::take).collect();
            self.state
                .fetch_sub(all.len() as u64 * ONE_SLEEPING, Ordering::SeqCst);
            all
        };
        for w in all {
            self.parkers[w].unpark(Wake::Plain);
        }
    }

    /// Parks worker `w` unless `last_look` (called after the worker is
    /// registered as sleeping) says there is a reason not to. `searching`
    /// says whether `w` currently counts as a searcher; it stops counting.
    ///
    /// Returns how the worker was woken, or `None` if it did not park (or
    /// its [`LastLook::ParkFor`] ran out) and nobody woke it. With `Some(Wake::AsSearcher)` the worker counts as a
    /// searcher again (and must hand over with
    /// [`Sleep::stop_searching`] when it stops).
    ///
    /// A worker that counted as a searcher and does not park after all
    /// ([`LastLook::TookWork`] or [`LastLook::StayAwake`], with `None` or
    /// `Some(Wake::Plain)` returned) has stopped searching without parking,
    /// so it hands over here: if nobody searches while somebody sleeps, one
    /// sleeper is woken. Without this, a searcher that found work while
    /// this worker still counted (and so woke nobody) and this worker's
    /// registration would together leave the remaining work with no one
    /// looking for it. A worker that did not count woke nobody's hopes and
    /// hands nothing over.
    pub(crate) fn park(
        &self,
        w: usize,
        searching: bool,
        last_look: impl FnOnce() -> LastLook,
    ) -> Option<Wake> {
        {
            let mut idle = lock(&self.idle);
            idle[self.worker_node[w]].push(w);
            let delta = if searching {
                ONE_SLEEPING.wrapping_sub(ONE_SEARCHING)
            } else {
                ONE_SLEEPING
            };
            // SeqCst read-modify-write: pairs with the fence in `new_work`.
            self.state.fetch_add(delta, Ordering::SeqCst);
        }
        fence(Ordering::SeqCst);
        let look = last_look();
        match look {
            LastLook::Park => return Some(self.parkers[w].park()),
            LastLook::ParkFor(timeout) => {
                if let Some(wake) = self.parkers[w].park_until(Some(Instant::now() + timeout)) {
                    return Some(wake);
                }
                // Timed out. Unregister; if a waker took us off the list
                // meanwhile, its unpark is pending: consume it below. A
                // timed-out worker does not hand over: it stopped counting
                // as a searcher when it registered, which was the moment a
                // producer could rely on it, and it looks again at once.
                if self.unregister(w) {
                    return None;
                }
                return Some(self.parkers[w].park());
            }
            LastLook::TookWork | LastLook::StayAwake => {}
        }
        if self.unregister(w) {
            if searching {
                self.hand_over(self.worker_node[w]);
            }
            return None;
        }
        // Someone already took us off the idle list and is about to
        // unpark us: consume that wake-up so accounting stays exact.
        let wake = self.parkers[w].park();
        if searching && wake == Wake::Plain {
            // Woken for its latch, not counted as a searcher: the caller
            // will not hand over, so we do (as above).
            self.hand_over(self.worker_node[w]);
        }
        Some(wake)
    }

    /// Takes worker `w` off the idle list if it is still on it (nobody
    /// has claimed it to unpark); returns whether it was.
    fn unregister(&self, w: usize) -> bool {
        self.take_off_idle(w, false)
    }

    /// Takes worker `w` off the idle list if it is on it, counting it as
    /// searching from then on if `as_searcher`; returns whether it was.
    fn take_off_idle(&self, w: usize, as_searcher: bool) -> bool {
        let mut idle = lock(&self.idle);
        let list = &mut idle[self.worker_node[w]];
        let Some(i) = list.iter().position(|&x| x == w) else {
            return false;
        };
        list.swap_remove(i);
        let delta = if as_searcher {
            ONE_SEARCHING.wrapping_sub(ONE_SLEEPING)
        } else {
            ONE_SLEEPING.wrapping_neg()
        };
        self.state.fetch_add(delta, Ordering::SeqCst);
        true
    }

    /// A worker stopped counting as a searcher without parking: if nobody
    /// searches while somebody sleeps, wake one (see [`Sleep::park`]).
    fn hand_over(&self, node: usize) {
        // SeqCst: ordered after the caller's own RMWs of the word, as the
        // producer's fence orders its push before its read.
        let s = self.state.load(Ordering::SeqCst);
        if searching(s) == 0 && sleeping(s) > 0 {
            self.wake_one(node);
        }
    }

    /// (searching, sleeping) counts, for tests and statistics.
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (u64, u64) {
        let s = self.state.load(Ordering::SeqCst);
        (searching(s), sleeping(s))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread::JoinHandle;

    /// Worker `w` parks (not searching, nothing in its last look) on a
    /// thread of its own; returns once it is registered as sleeping.
    fn parked(sleep: &Arc<Sleep>, w: usize) -> JoinHandle<Option<Wake>> {
        let before = sleep.counts().1;
        let s = Arc::clone(sleep);
        let t = std::thread::spawn(move || s.park(w, false, || LastLook::Park));
        while sleep.counts().1 == before {
            std::thread::yield_now();
        }
        t
    }

    /// Checks that a hand-over woke the sleeper parked on `t` as a
    /// searcher, leaving (1 searching, 0 sleeping). On failure the sleeper
    /// is unparked first, so that the test fails instead of hanging.
    fn assert_handed_over(sleep: &Sleep, t: JoinHandle<Option<Wake>>, who: &str) {
        let counts = sleep.counts();
        if counts != (1, 0) {
            sleep.wake_all();
        }
        assert_eq!(counts, (1, 0), "{who} searches in its place");
        assert_eq!(t.join().unwrap(), Some(Wake::AsSearcher));
    }

    #[test]
    fn searcher_limit_is_half_the_workers() {
        let sleep = Sleep::new(vec![0; 4], 1);
        assert!(sleep.try_start_searching());
        assert!(sleep.try_start_searching());
        assert!(!sleep.try_start_searching());
        assert_eq!(sleep.counts(), (2, 0));
        let one = Sleep::new(vec![0], 1);
        assert!(one.try_start_searching());
        assert!(!one.try_start_searching());
    }

    #[test]
    fn new_work_wakes_a_sleeper_of_the_preferred_node_as_searcher() {
        let sleep = Arc::new(Sleep::new(vec![0, 1, 1], 2));
        let t = parked(&sleep, 2);
        sleep.new_work(1);
        assert_eq!(t.join().unwrap(), Some(Wake::AsSearcher));
        assert_eq!(sleep.counts(), (1, 0));
    }

    #[test]
    fn no_wake_while_someone_searches() {
        let sleep = Arc::new(Sleep::new(vec![0, 0], 1));
        assert!(sleep.try_start_searching());
        let t = parked(&sleep, 1);
        sleep.new_work(0);
        assert_eq!(sleep.counts(), (1, 1), "a searcher exists: nobody is woken");
        // The searcher finds the work and, being the last, wakes the sleeper.
        sleep.stop_searching(0);
        assert_eq!(t.join().unwrap(), Some(Wake::AsSearcher));
    }

    #[test]
    fn a_searcher_whose_latch_is_set_hands_over() {
        // Worker 0 searches, so a producer wakes nobody; then worker 0's
        // latch is set and it stops searching. The job must not be left
        // with nobody looking: worker 1 is woken.
        let sleep = Arc::new(Sleep::new(vec![0, 0], 1));
        let t = parked(&sleep, 1);
        assert!(sleep.try_start_searching());
        sleep.new_work(0);
        assert_eq!(sleep.counts(), (1, 1), "a searcher exists: nobody is woken");
        sleep.stop_searching(0);
        assert_handed_over(&sleep, t, "worker 1");
    }

    #[test]
    fn a_searcher_that_stays_awake_for_its_latch_hands_over() {
        let sleep = Arc::new(Sleep::new(vec![0, 0], 1));
        let t = parked(&sleep, 1);
        assert!(sleep.try_start_searching());
        assert_eq!(sleep.park(0, true, || LastLook::StayAwake), None);
        assert_handed_over(&sleep, t, "worker 1");
    }

    #[test]
    fn a_worker_that_never_searched_hands_nothing_over() {
        let sleep = Arc::new(Sleep::new(vec![0, 0], 1));
        let t = parked(&sleep, 1);
        assert_eq!(sleep.park(0, false, || LastLook::TookWork), None);
        assert_eq!(sleep.counts(), (0, 1), "nobody relied on worker 0");
        sleep.wake_all();
        assert_eq!(t.join().unwrap(), Some(Wake::Plain));
    }

    #[test]
    fn staying_awake_undoes_the_registration() {
        let sleep = Sleep::new(vec![0], 1);
        assert!(sleep.try_start_searching());
        assert_eq!(sleep.park(0, true, || LastLook::StayAwake), None);
        assert_eq!(sleep.counts(), (0, 0));
    }

    #[test]
    fn a_searcher_that_takes_work_in_its_last_look_hands_over() {
        // Workers 0 and 1 search, worker 2 sleeps. Worker 0 finds work
        // while worker 1 still counts, so it wakes nobody; worker 1 then
        // registers to park and takes work in its last look. Somebody must
        // still be looking for the rest: worker 1 wakes worker 2.
        let sleep = Arc::new(Sleep::new(vec![0, 0, 0], 1));
        let t = parked(&sleep, 2);
        assert!(sleep.try_start_searching());
        assert!(sleep.try_start_searching());
        sleep.stop_searching(0);
        assert_eq!(sleep.counts(), (1, 1), "worker 1 still searches");
        assert_eq!(sleep.park(1, true, || LastLook::TookWork), None);
        assert_handed_over(&sleep, t, "worker 2");
    }

    #[test]
    fn a_searcher_woken_for_its_latch_while_taking_work_hands_over() {
        // As above, but a latch setter takes worker 1 off the idle list
        // (a plain wake-up) during its last look: it is not counted as a
        // searcher, so its caller will not hand over; park must.
        let sleep = Arc::new(Sleep::new(vec![0, 0, 0], 1));
        let t = parked(&sleep, 2);
        assert!(sleep.try_start_searching());
        assert!(sleep.try_start_searching());
        sleep.stop_searching(0);
        let woken = sleep.park(1, true, || {
            sleep.wake_specific(1);
            LastLook::TookWork
        });
        assert_eq!(woken, Some(Wake::Plain));
        assert_handed_over(&sleep, t, "worker 2");
    }

    #[test]
    fn staying_awake_for_work_wakes_nobody_while_someone_searches() {
        let sleep = Arc::new(Sleep::new(vec![0, 0, 0], 1));
        let t = parked(&sleep, 2);
        assert!(sleep.try_start_searching());
        assert!(sleep.try_start_searching());
        assert_eq!(sleep.park(1, true, || LastLook::TookWork), None);
        assert_eq!(sleep.counts(), (1, 1), "worker 0 still searches");
        sleep.wake_all();
        assert_eq!(t.join().unwrap(), Some(Wake::Plain));
    }

    #[test]
    fn wake_specific_and_wake_all() {
        let sleep = Arc::new(Sleep::new(vec![0, 0, 0], 1));
        let threads: Vec<_> = (0..3)
            .map(|w| {
                let s = Arc::clone(&sleep);
                std::thread::spawn(move || s.park(w, false, || LastLook::Park))
            })
            .collect();
        while sleep.counts().1 < 3 {
            std::thread::yield_now();
        }
        assert!(sleep.wake_specific(1));
        assert!(!sleep.wake_specific(1), "not idle any more: no effect");
        while sleep.counts().1 != 2 {
            std::thread::yield_now();
        }
        sleep.wake_all();
        for t in threads {
            assert_eq!(t.join().unwrap(), Some(Wake::Plain));
        }
        assert_eq!(sleep.counts(), (0, 0));
    }

    #[test]
    fn a_timed_park_runs_out_unregistered_and_hands_nothing_over() {
        let sleep = Arc::new(Sleep::new(vec![0, 0], 1));
        let t = parked(&sleep, 1);
        assert!(sleep.try_start_searching());
        let start = Instant::now();
        let wake = sleep.park(0, true, || LastLook::ParkFor(Duration::from_millis(20)));
        assert_eq!(wake, None, "nobody woke it");
        assert!(start.elapsed() >= Duration::from_millis(20), "it waited");
        // Worker 0 neither sleeps nor searches; worker 1 still sleeps (a
        // hand-over would have woken it as a searcher).
        assert_eq!(sleep.counts(), (0, 1));
        sleep.wake_all();
        assert_eq!(t.join().unwrap(), Some(Wake::Plain));
    }

    #[test]
    fn a_timed_park_ends_early_when_woken() {
        let sleep = Arc::new(Sleep::new(vec![0, 0], 1));
        let s = Arc::clone(&sleep);
        let t = std::thread::spawn(move || {
            s.park(0, false, || LastLook::ParkFor(Duration::from_secs(600)))
        });
        while sleep.counts().1 == 0 {
            std::thread::yield_now();
        }
        sleep.new_work(0);
        assert_eq!(t.join().unwrap(), Some(Wake::AsSearcher));
        assert_eq!(sleep.counts(), (1, 0));
    }

    #[test]
    fn a_wake_that_races_a_timeout_is_consumed() {
        // Claimed (taken off the idle list) but not yet unparked when its
        // timeout runs out: the park must consume the coming unpark instead
        // of returning with it pending, so the next park is not a no-op.
        let sleep = Sleep::new(vec![0], 1);
        std::thread::scope(|sc| {
            let t = sc.spawn(|| {
                sleep.park(0, false, || {
                    // Claimed while still looking; unparked only later.
                    let claimed = lock(&sleep.idle)[0].pop();
                    assert_eq!(claimed, Some(0));
                    sleep
                        .state
                        .fetch_add(ONE_SEARCHING.wrapping_sub(ONE_SLEEPING), Ordering::SeqCst);
                    LastLook::ParkFor(Duration::from_millis(1))
                })
            });
            std::thread::sleep(Duration::from_millis(30));
            sleep.parkers[0].unpark(Wake::AsSearcher);
            assert_eq!(t.join().unwrap(), Some(Wake::AsSearcher));
        });
        assert!(
            !lock(&sleep.parkers[0].state).notified,
            "the unpark was consumed"
        );
    }

    #[test]
    fn a_hint_wakes_its_sleeping_worker_as_a_searcher() {
        let sleep = Arc::new(Sleep::new(vec![0, 0], 1));
        let t = parked(&sleep, 1);
        assert!(!sleep.new_hint_for_worker(0), "worker 0 does not sleep");
        assert!(sleep.new_hint_for_worker(1));
        assert_eq!(t.join().unwrap(), Some(Wake::AsSearcher));
        assert_eq!(sleep.counts(), (1, 0), "it counts as searching");
    }
}
