//! One run of a loop: a piece, batch by batch, on one worker, with the
//! polls that split it (see `drive.rs` for the whole picture).
//!
//! With `with_max_len(m)` a run also cuts its units into *leaves* of at
//! most `m` units (and, as rayon's leaves, at least `with_min_len` units,
//! found by halving what is left), each folded by a folder of its own: a
//! `fold` yields one value per leaf, and a closure that panics abandons
//! the rest of its leaf only, the run going on with the next one and
//! rethrowing the first panic when it ends (rayon's `join` of leaves: the
//! other leaves still run).

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

use super::clock;
use super::{Consumer, Extent, Folder, Hints, Piece};
use crate::numa::NodeId;
use crate::sched::{join_to, offer_during, Offered, To, WorkerThread};

/// A batch aims at taking about this long (µs): the next batch is sized
/// from the last one's rate.
pub(super) const BATCH_US: u64 = 10;

/// A batch is at most this many times longer than the last one (which
/// may have measured close to nothing).
const MAX_GROWTH: usize = 4096;

/// A batch that took less than this (ns) measured nothing but the clock
/// read and the poll around it (a clock read alone costs about 13 ns
/// here): the next one grows by [`MAX_GROWTH`]. Without this floor a loop
/// whose units cost nothing would read the clock once more for every
/// factor of ~500 of its length (the rate it measures is the overhead's).
/// Units that look free this way cost a few ns at most, so the grown
/// batch still takes microseconds.
pub(super) const FREE_NS: u64 = 30;

/// A loop that has run this long (µs) wakes sleeping workers to help (a
/// wake-up costs a few microseconds of the waker's time and tens of
/// microseconds before the woken worker runs: shorter loops would not
/// gain).
pub(super) const WAKE_AFTER_US: u64 = 50;

/// Loop runs nested on one thread's stack (each split nests the rest of
/// its run in a `join_to`; a worker waiting for a half runs other halves
/// on top) beyond which a run does not split. Halving alone nests about
/// log₂ of the units; a placed run whose halves nobody takes can also
/// wait, take its own oldest half from its node's queue (first in, first
/// out) and split that again, which nested 128 runs deep (about 1 MiB of
/// a debug build's stack) on the test machine.
pub(super) const MAX_DEPTH: u32 = 48;

/// Split stress (a testing aid): split after every batch, whether asked
/// or not.
static STRESS: AtomicBool = AtomicBool::new(false);

/// The flag of a half that is never taken: a run that took its own
/// published half back runs without publishing again until asked.
static NOT_TAKEN: AtomicBool = AtomicBool::new(false);

/// Runs nested on a thread's stack (a run that waits for its published
/// half may run other loops' halves meanwhile) beyond which split stress
/// stops splitting, so that its deep trees of waits do not exhaust the
/// stack.
pub(super) const STRESS_DEPTH: u32 = 16;

thread_local! {
    /// Runs of loops active on this thread's stack.
    static DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether split stress is on (see [`set_split_stress`]).
pub(super) fn stressed() -> bool {
    STRESS.load(Ordering::Relaxed)
}

/// Counts a run on this thread's stack while it lives.
pub(super) struct Nested;

impl Nested {
    /// Counts a run; with the runs already on this thread's stack.
    pub(super) fn enter() -> (Nested, u32) {
        let d = DEPTH.with(|c| {
            let d = c.get();
            c.set(d + 1);
            d
        });
        (Nested, d)
    }
}

impl Drop for Nested {
    fn drop(&mut self) {
        DEPTH.with(|c| c.set(c.get() - 1));
    }
}

/// Makes every loop split after every batch that leaves enough units (as
/// if an idle worker always asked), or stops doing so. A testing aid: the
/// results of a loop must not depend on where it was split, and this
/// exercises the splits (and their hand-over to other workers) that a loop
/// on an otherwise idle pool would rarely make. Affects every pool of the
/// process.
#[doc(hidden)]
pub fn set_split_stress(on: bool) {
    STRESS.store(on, Ordering::Relaxed);
}

/// What every run of one loop shares.
pub(super) struct Loop<'c, C> {
    pub(super) consumer: &'c C,
    pub(super) hints: Hints,
    /// When the loop started ([`clock`] ticks).
    pub(super) started: u64,
    /// [`BATCH_US`] in ticks.
    pub(super) batch_ticks: u64,
    /// [`FREE_NS`] in ticks.
    pub(super) free_ticks: u64,
    /// [`WAKE_AFTER_US`] in ticks.
    pub(super) wake_ticks: u64,
    /// Workers of the pool.
    pub(super) workers: usize,
}

/// How one run splits and counts.
pub(super) struct Run<'p> {
    /// Where a split-off half goes.
    pub(super) to: To<'p>,
    /// Whether to split at all (not in a static share).
    pub(super) split: bool,
    /// Split only when a worker of this worker's node is idle (a placed
    /// share under a policy that honours places).
    pub(super) node_only: bool,
    /// The placed data of the run's units, counted batch by batch.
    pub(super) data: &'p [Extent],
}

impl Run<'_> {
    pub(super) const PLAIN: Run<'static> = Run {
        to: To::Deque,
        split: true,
        node_only: false,
        data: &[],
    };
}

/// Adds the bytes of units `pos..pos + n` to `wt`'s statistics.
fn count_data(wt: &WorkerThread, here: Option<NodeId>, data: &[Extent], pos: usize, n: usize) {
    let (mut all, mut local) = (0u64, 0u64);
    for e in data {
        let (s, t) = (e.start.max(pos), e.end.min(pos.saturating_add(n)));
        if s < t {
            let b = ((t - s) as u64).saturating_mul(e.unit_bytes as u64);
            all += b;
            if Some(e.node) == here {
                local += b;
            }
        }
    }
    if all > 0 {
        wt.count_data(all, local);
    }
}

/// The OS node number of `wt`'s node.
pub(super) fn node_id(wt: &WorkerThread) -> NodeId {
    wt.registry().topology().nodes()[wt.node_index()].id()
}

/// The size of the next batch after one of `batch` units took `took`
/// ticks: the units that take about `target` ticks at that rate, at most
/// [`MAX_GROWTH`] times and at least half as many; [`MAX_GROWTH`] times
/// when `took` is at most `free` (nothing measured).
pub(super) fn next_batch(batch: usize, took: u64, target: u64, free: u64) -> usize {
    let grown = batch.saturating_mul(MAX_GROWTH);
    if took <= free || took.saturating_mul(MAX_GROWTH as u64) <= target {
        return grown;
    }
    let at_rate = batch as u128 * u128::from(target) / u128::from(took.max(1));
    // Saturating: a huge range's batches may be near usize::MAX units.
    let at_rate = usize::try_from(at_rate).unwrap_or(usize::MAX);
    at_rate.clamp((batch / 2).max(1), grown)
}

/// The length of the next leaf of a run with `left` units: all of them
/// when at most `max`, else halved while the half is at least `min` (so
/// leaves are at least `min` long, as the rest is never shorter than the
/// leaf).
fn leaf_len(left: usize, min: usize, max: usize) -> usize {
    let mut l = left;
    while l > max && l / 2 >= min {
        l /= 2;
    }
    l
}

/// What a run has finished: the results of its earlier leaves, reduced in
/// order, and the first panic of a leaf.
struct Done<R> {
    result: Option<R>,
    panic: Option<Box<dyn Any + Send>>,
}

impl<R> Done<R> {
    fn add<C: Consumer<T, Result = R>, T>(&mut self, c: &C, r: R) {
        self.result = Some(match self.result.take() {
            None => r,
            Some(d) => c.reduce(d, r),
        });
    }

    /// The run's result after `last`, or its first panic.
    fn finish<C: Consumer<T, Result = R>, T>(mut self, c: &C, last: R) -> R {
        if let Some(p) = self.panic.take() {
            drop(last);
            drop(self.result.take());
            panic::resume_unwind(p);
        }
        match self.result.take() {
            None => last,
            Some(d) => c.reduce(d, last),
        }
    }
}

/// A batch of `n` units from the front of `piece` into `f` (at `pos`);
/// when `leafing`, a panic of the closures is caught and returned (the
/// rest of its leaf is then abandoned: [`settle`]).
#[inline(always)]
fn batch_of<P, C>(
    f: C::Folder,
    pos: usize,
    piece: &mut P,
    n: usize,
    leafing: bool,
) -> Result<C::Folder, Box<dyn Any + Send>>
where
    P: Piece,
    C: Consumer<P::Item>,
{
    let items = piece.front(n);
    if leafing {
        panic::catch_unwind(AssertUnwindSafe(move || f.consume(pos, items)))
    } else {
        Ok(f.consume(pos, items))
    }
}

/// What a batch of `n` units from `pos` (`leaf` units left in its leaf
/// before it, `used` taken) leaves: the folder to go on with, the position
/// after it, the units taken of the current leaf, and whether it finished.
/// If a leaf's closure panicked (`false`), the panic is kept in `done`, the
/// rest of the leaf taken from `piece` and dropped, and a new folder
/// starts the next leaf.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn settle<P, C>(
    c: &C,
    outcome: Result<C::Folder, Box<dyn Any + Send>>,
    piece: &mut P,
    pos: usize,
    n: usize,
    leaf: usize,
    used: usize,
    done: &mut Done<C::Result>,
) -> (C::Folder, usize, usize, bool)
where
    P: Piece,
    C: Consumer<P::Item>,
{
    match outcome {
        Ok(f) => (f, pos.saturating_add(n), used + n, true),
        Err(p) => {
            done.panic.get_or_insert(p);
            let rest = (leaf - n).min(piece.units());
            drop(piece.front(rest));
            (c.folder(), pos.saturating_add(n + rest), 0, false)
        }
    }
}

/// Runs a half that worker `owner` split off (`piece`, units from `pos`)
/// on the worker that took it. If another worker took it, `taken` says so
/// (the owner's run keeps a half published only while its last one was
/// taken); taken back by its owner (nobody wanted it), it runs without
/// publishing until asked.
fn other_half<P, C>(
    piece: P,
    pos: usize,
    owner: usize,
    taken: &AtomicBool,
    lp: &Loop<'_, C>,
    run: &Run<'_>,
) -> C::Result
where
    P: Piece,
    C: Consumer<P::Item>,
{
    let wt = WorkerThread::current().expect("a loop's half runs on a worker");
    let published = if wt.index() == owner {
        Some(&NOT_TAKEN)
    } else {
        taken.store(true, Ordering::Relaxed);
        None
    };
    adaptive(wt, piece, pos, lp.consumer.folder(), lp, run, published, 0)
}

/// Runs `piece` (units from `pos`) on `wt`, batch by batch, into
/// `folder`, splitting as `run` allows (see `drive.rs`). `published` is
/// the flag of the half this run's parent published last (whether it was
/// taken), `carry` the units `folder` took of its current leaf before.
#[allow(clippy::too_many_arguments)]
pub(super) fn adaptive<P, C>(
    wt: &WorkerThread,
    mut piece: P,
    mut pos: usize,
    folder: C::Folder,
    lp: &Loop<'_, C>,
    run: &Run<'_>,
    published: Option<&AtomicBool>,
    carry: usize,
) -> C::Result
where
    P: Piece,
    C: Consumer<P::Item>,
{
    let Hints {
        min_len, max_len, ..
    } = lp.hints;
    let c = lp.consumer;
    let smallest = min_len.min(max_len);
    let leafing = max_len != usize::MAX;
    // A search without length bounds: a folder per batch (see
    // `Consumer::eager`).
    let per_batch = !leafing && min_len == 1 && c.eager();
    let (_nested, depth) = Nested::enter();
    let here = (!run.data.is_empty()).then(|| node_id(wt));
    let mut done = Done {
        result: None,
        panic: None,
    };
    let mut folder = Some(folder);
    // Units left in the current leaf (usize::MAX: no leaves), and the
    // units its folder took.
    let mut leaf = usize::MAX;
    let mut used = 0;
    if leafing {
        let l = leaf_len(piece.units().saturating_add(carry), min_len, max_len);
        if l > carry {
            leaf = l - carry;
            used = carry;
        } else {
            // The leaf the folder began is complete.
            let f = folder.take().expect("a folder");
            done.add(c, f.complete());
            folder = Some(c.folder());
            leaf = leaf_len(piece.units(), min_len, max_len);
        }
    }
    let mut batch = smallest;
    // Whether batches offer the rest while they run (`offer.rs` in
    // sched/join): not in shares that keep to a place or a worker, and
    // only for pieces that split for free. Not after a batch that took
    // no measurable time (those grow fast and stay short: the offer
    // would cost more than they do).
    let offering = run.split
        && !run.node_only
        && matches!(run.to, To::Deque)
        && piece.split_cheap()
        && depth < MAX_DEPTH;
    let mut last_free = false;
    // The loop's own start for its first run; a clock read for the others.
    let mut t = if pos == 0 && lp.started != 0 {
        lp.started
    } else {
        clock::now()
    };
    loop {
        let left = piece.units();
        let f = folder.as_ref().expect("a folder");
        if left == 0 || f.full() || c.stop(pos, pos.saturating_add(left)) {
            break;
        }
        if leaf == 0 {
            // Next leaf: its own folder.
            let f = folder.take().expect("a folder");
            done.add(c, f.complete());
            folder = Some(c.folder());
            leaf = leaf_len(left, min_len, max_len);
            used = 0;
        }
        let n = batch.min(left).min(leaf);
        let f = folder.take().expect("a folder");
        let after = left - n;
        let offered = offering && !last_free && after >= min_len.max(1) && done.panic.is_none();
        let outcome = if offered {
            // Offer the rest while the batch runs (see `offer.rs` in
            // sched/join): a nested loop's poll may hand half of it over.
            let (mut head, rest) = piece.split_at(n);
            debug_assert_eq!(head.units(), n, "a split_cheap piece split exactly");
            let taken = AtomicBool::new(false);
            let taken = &taken;
            let owner = wt.index();
            let done_ref = &mut done;
            let offered = offer_during(
                wt,
                Some((rest, pos.saturating_add(n))),
                |r: &mut Option<(P, usize)>| {
                    // Half of the rest, or all of it when the halves would
                    // be shorter than `with_min_len` (an idle worker asked:
                    // a rest of one unit goes too).
                    let units = r.as_ref()?.0.units();
                    let mid = if units / 2 >= min_len { units / 2 } else { 0 };
                    let (rest, at) = r.take()?;
                    let (mine, theirs) = rest.split_at(mid);
                    *r = Some((mine, at));
                    Some(Some((theirs, at.saturating_add(mid))))
                },
                || batch_of::<P, C>(f, pos, &mut head, n, leafing),
                |outcome, mine| {
                    let (mut mine, _) = mine.expect("the rest");
                    let (folder, at, used, ok) =
                        settle(c, outcome, &mut mine, pos, n, leaf, used, done_ref);
                    if ok && !run.data.is_empty() {
                        count_data(wt, here, run.data, pos, n);
                    }
                    let folder = if ok && per_batch {
                        // A search downstream: pass this batch's result on
                        // now, as the loop below does.
                        done_ref.add(c, folder.complete());
                        c.folder()
                    } else {
                        folder
                    };
                    adaptive(wt, mine, at, folder, lp, run, Some(taken), used)
                },
                move |part| {
                    let (theirs, at) = part.expect("an offered part");
                    other_half(theirs, at, owner, taken, lp, run)
                },
            );
            match offered {
                Offered::Kept(outcome, rest) => {
                    piece = rest.expect("the rest").0;
                    outcome
                }
                Offered::Split(a, b) => return done.finish(c, c.reduce(a, b)),
            }
        } else {
            batch_of::<P, C>(f, pos, &mut piece, n, leafing)
        };
        let (f, at, u, ok) = settle(c, outcome, &mut piece, pos, n, leaf, used, &mut done);
        folder = Some(f);
        used = u;
        if !ok {
            // A leaf panicked: its rest is abandoned, the next leaf runs.
            pos = at;
            leaf = 0;
            continue;
        }
        if leafing {
            leaf -= n;
        }
        if !run.data.is_empty() {
            count_data(wt, here, run.data, pos, n);
        }
        // Positions saturate past usize::MAX units (the longest ranges,
        // which are not indexed: only searches look at their positions).
        pos = pos.saturating_add(n);
        if piece.units() == 0 {
            break; // done: no need to time the batch
        }
        if per_batch {
            // A search downstream: pass this batch's result on now.
            let f = folder.take().expect("a folder");
            done.add(c, f.complete());
            folder = Some(c.folder());
        }
        let now = clock::now();
        let rest = piece.units();
        // An offered batch also paid for the offer: it measured nothing
        // below twice the threshold.
        let free = if offered {
            2 * lp.free_ticks
        } else {
            lp.free_ticks
        };
        last_free = now.saturating_sub(t) <= free;
        batch = next_batch(batch, now.saturating_sub(t), lp.batch_ticks, free);
        if batch >= rest / 2 {
            // What is left takes at most about two batches' time: one batch
            // (a poll and a clock read fewer; the last batch of a run may so
            // take up to twice BATCH_US).
            batch = rest;
        }
        batch = batch.clamp(smallest, max_len);
        t = now;
        // A run that saw a panic does not split (it ends soon), nor one
        // [`MAX_DEPTH`] runs deep on this thread's stack.
        if run.split
            && rest / 2 >= min_len
            && rest >= 2
            && done.panic.is_none()
            && depth < MAX_DEPTH
        {
            let long = now.saturating_sub(lp.started) >= lp.wake_ticks;
            let stress = STRESS.load(Ordering::Relaxed) && depth < STRESS_DEPTH;
            // A long loop keeps half of what is left published while other
            // workers exist (its last published half was taken): a worker
            // descheduled in the middle of a long run cannot hold the rest
            // back. Placed shares keep theirs for their own node (asked).
            let keep_published = long
                && !run.node_only
                && lp.workers > 1
                && published.is_none_or(|taken| taken.load(Ordering::Relaxed));
            // Kept published: an older loop's offer on this thread (see
            // `offer.rs` in sched/join) goes first, as for a request.
            let keep_published = keep_published && !wt.publish_offer();
            if stress
                || keep_published
                || (wt.split_wanted(long) && (!run.node_only || wt.node_has_idle_peer()))
            {
                let mid = rest / 2;
                let (mine, theirs) = piece.split_at(mid);
                let their_pos = pos.saturating_add(mid);
                let taken = AtomicBool::new(false);
                let taken = &taken;
                let owner = wt.index();
                let f = folder.take().expect("a folder");
                let (a, b) = join_to(
                    wt,
                    run.to,
                    move || adaptive(wt, mine, pos, f, lp, run, Some(taken), used),
                    move || other_half(theirs, their_pos, owner, taken, lp, run),
                );
                return done.finish(c, c.reduce(a, b));
            }
        }
    }
    let last = folder.take().expect("a folder").complete();
    done.finish(c, last)
}

#[cfg(test)]
mod tests {
    use super::{next_batch, Nested, MAX_DEPTH, MAX_GROWTH};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    /// A run [`MAX_DEPTH`] runs deep on its thread's stack does not split,
    /// even a long one with an idle worker beside it (one not that deep
    /// hands half of such a loop over within microseconds).
    #[test]
    fn a_run_deep_on_the_stack_does_not_split() {
        use crate::iter::{IntoParallelIterator, ParallelIterator};
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("a pool");
        pool.install(|| {
            let _deep: Vec<Nested> = (0..MAX_DEPTH).map(|_| Nested::enter().0).collect();
            let me = crate::current_thread_index();
            let elsewhere = AtomicUsize::new(0);
            (0..2000u32).into_par_iter().for_each(|_| {
                let t = Instant::now();
                while t.elapsed() < Duration::from_micros(5) {}
                if crate::current_thread_index() != me {
                    elsewhere.fetch_add(1, Ordering::Relaxed);
                }
            });
            assert_eq!(elsewhere.load(Ordering::Relaxed), 0);
        });
    }

    /// 10 µs at 1 tick per ns; 30 ns free.
    const TARGET: u64 = 10_000;
    const FREE: u64 = 30;

    #[test]
    fn a_batch_that_measured_nothing_grows_by_the_cap() {
        assert_eq!(next_batch(1, 0, TARGET, FREE), MAX_GROWTH);
        assert_eq!(next_batch(1, FREE, TARGET, FREE), MAX_GROWTH);
        assert_eq!(next_batch(4096, 25, TARGET, FREE), 4096 * MAX_GROWTH);
    }

    #[test]
    fn a_measured_batch_is_sized_by_its_rate() {
        // 1 unit in 100 ticks: 100 units make the 10 µs.
        assert_eq!(next_batch(1, 100, TARGET, FREE), 100);
        // 1,000 units in 20 µs: half as many.
        assert_eq!(next_batch(1_000, 20_000, TARGET, FREE), 500);
        // Never below half of the last batch, never past the cap.
        assert_eq!(next_batch(1_000, 1_000_000, TARGET, FREE), 500);
        assert_eq!(next_batch(2, 31, TARGET, FREE), 2 * 10_000 / 31);
        assert_eq!(next_batch(usize::MAX / 2, 31, TARGET, FREE), usize::MAX);
    }
}
