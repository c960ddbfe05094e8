//! The driver: runs a [`Piece`] with a [`Consumer`] on the pool.
//!
//! - **Adaptive** (the default): one worker runs the piece batch by batch.
//!   Batches start at `with_min_len` units; each next batch is sized from
//!   the rate of the last one to take about [`BATCH_US`] (growing at most
//!   [`MAX_GROWTH`]-fold, shrinking at most by half, never beyond
//!   `with_max_len`), so a poll costs one clock read and one Relaxed load
//!   per ~10 µs of work whatever the body costs, and an empty loop of a
//!   million units takes three batches. After each batch the worker
//!   asks [`WorkerThread::split_wanted`]: an idle worker set its `request`
//!   flag, or (once the loop has run for [`WAKE_AFTER_US`]) workers sleep
//!   and none searches. Then it splits what is left in two, publishes the
//!   second half with [`join_to`] (its deque, or its node's queue for a
//!   placed share) and goes on with the first half; the two runs' results
//!   are reduced left before right. Nobody asking means no split: a loop on
//!   a busy pool costs a sequential loop plus the polls.
//! - **Long loops** (run for [`WAKE_AFTER_US`] or more) also keep half of
//!   what is left *published* on their own (when the pool has other
//!   workers): once the half they published was taken by another worker,
//!   they publish half of the rest, so a worker that the operating system
//!   deschedules in the middle of a long run never holds more than half of
//!   it back (measured on the shared test VM, where a half stuck behind a
//!   descheduled worker cost whole milliseconds). A half nobody takes is
//!   taken back by its owner and run without publishing again, so a long
//!   loop on a busy pool makes one extra split, not one per batch.
//! - **Placed**: a piece over placed data (a `NodeVec`, or zips of them)
//!   is first cut at the node boundaries of its first placed source, and
//!   each node's share is sent to that node ([`To::Place`]: a hint under
//!   `Locality`, strict under `StrictLocality` or `.strict()`), where it
//!   runs adaptively, splitting only for idle workers of its node. Every
//!   batch counts its bytes, local or not, in the pool's statistics.
//! - **Static**: one contiguous share per worker, each sent to its worker
//!   ([`To::Worker`]) and run without splitting (see
//!   [`Schedule::Static`]).

use std::sync::atomic::{AtomicBool, Ordering};

use super::clock;
use super::{Consumer, Extent, Folder, Hints, Options, Piece, Schedule};
use crate::numa::NodeId;
use crate::sched::{global_registry, join_to, To, WorkerThread};
use crate::Place;

/// A batch aims at taking about this long (µs): the next batch is sized
/// from the last one's rate.
const BATCH_US: u64 = 10;

/// A batch is at most this many times longer than the last one (which
/// may have measured close to nothing).
const MAX_GROWTH: usize = 4096;

/// A loop that has run this long (µs) wakes sleeping workers to help (a
/// wake-up costs a few microseconds of the waker's time and tens of
/// microseconds before the woken worker runs: shorter loops would not
/// gain).
const WAKE_AFTER_US: u64 = 50;

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
const STRESS_DEPTH: u32 = 16;

thread_local! {
    /// Runs of loops active on this thread's stack.
    static DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Counts a run on this thread's stack while it lives.
struct Nested;

impl Nested {
    fn enter() -> (Nested, u32) {
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

/// Runs `op` on a worker: the calling thread's if it is one (of any pool),
/// else on the global pool (blocking until it is done).
pub(crate) fn in_worker<R: Send>(op: impl FnOnce(&WorkerThread) -> R + Send) -> R {
    match WorkerThread::current() {
        Some(wt) => op(wt),
        None => global_registry().in_worker(|wt, _| op(wt)),
    }
}

/// Runs `piece` with `consumer` on the current pool (see the module docs).
pub(crate) fn run<P, C>(piece: P, consumer: C) -> C::Result
where
    P: Piece,
    C: Consumer<P::Item>,
{
    if piece.units() == 0 {
        return consumer.folder().complete();
    }
    let hints = piece.hints();
    // Options set on the consumer side come later in the chain: they win.
    let options = hints.options.or(consumer.options());
    let hints = Hints {
        min_len: hints.min_len.max(1),
        max_len: hints.max_len.max(1),
        options,
    };
    in_worker(move |wt| {
        let tick = clock::ticks_per_us();
        let lp = Loop {
            consumer: &consumer,
            hints,
            started: clock::now(),
            batch_ticks: BATCH_US * tick,
            wake_ticks: WAKE_AFTER_US * tick,
            workers: wt.registry().num_threads(),
        };
        match options.schedule.unwrap_or_default() {
            Schedule::Static => run_static(wt, piece, &lp),
            _ => run_adaptive(wt, piece, &lp, options),
        }
    })
}

/// What every run of one loop shares.
struct Loop<'c, C> {
    consumer: &'c C,
    hints: Hints,
    /// When the loop started ([`clock`] ticks).
    started: u64,
    /// [`BATCH_US`] in ticks.
    batch_ticks: u64,
    /// [`WAKE_AFTER_US`] in ticks.
    wake_ticks: u64,
    /// Workers of the pool.
    workers: usize,
}

/// How one run splits and counts.
struct Run<'p> {
    /// Where a split-off half goes.
    to: To<'p>,
    /// Whether to split at all (not in a static share).
    split: bool,
    /// Split only when a worker of this worker's node is idle (a placed
    /// share under a policy that honours places).
    node_only: bool,
    /// The placed data of the run's units, counted batch by batch.
    data: &'p [Extent],
}

impl Run<'_> {
    const PLAIN: Run<'static> = Run {
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
fn node_id(wt: &WorkerThread) -> NodeId {
    wt.registry().topology().nodes()[wt.node_index()].id()
}

/// The size of the next batch after one of `batch` units took `took`
/// ticks: the units that take about `target` ticks at that rate, at most
/// [`MAX_GROWTH`] times and at least half as many.
fn next_batch(batch: usize, took: u64, target: u64) -> usize {
    let grown = batch.saturating_mul(MAX_GROWTH);
    if took.saturating_mul(MAX_GROWTH as u64) <= target {
        return grown;
    }
    let at_rate = (batch as u128 * u128::from(target) / u128::from(took.max(1))) as usize;
    at_rate.clamp((batch / 2).max(1), grown)
}

/// Runs `piece` (units from `pos`) on `wt`, batch by batch, into
/// `folder`, splitting as `run` allows (see the module docs).
fn adaptive<P, C>(
    wt: &WorkerThread,
    mut piece: P,
    mut pos: usize,
    mut folder: C::Folder,
    lp: &Loop<'_, C>,
    run: &Run<'_>,
    published: Option<&AtomicBool>,
) -> C::Result
where
    P: Piece,
    C: Consumer<P::Item>,
{
    let Hints {
        min_len, max_len, ..
    } = lp.hints;
    let smallest = min_len.min(max_len);
    let (_nested, depth) = Nested::enter();
    let here = (!run.data.is_empty()).then(|| node_id(wt));
    let mut batch = smallest;
    // The loop's own start for its first run; a clock read for the others.
    let mut t = if pos == 0 && lp.started != 0 {
        lp.started
    } else {
        clock::now()
    };
    loop {
        let left = piece.units();
        if left == 0 || folder.full() || lp.consumer.stop(pos, pos.saturating_add(left)) {
            break;
        }
        let n = batch.min(left);
        folder = folder.consume(pos, piece.front(n));
        if !run.data.is_empty() {
            count_data(wt, here, run.data, pos, n);
        }
        // Positions saturate past usize::MAX units (the longest ranges,
        // which are not indexed: only searches look at their positions).
        pos = pos.saturating_add(n);
        if piece.units() == 0 {
            break; // done: no need to time the batch
        }
        let now = clock::now();
        batch = next_batch(batch, now.saturating_sub(t), lp.batch_ticks).clamp(smallest, max_len);
        t = now;
        let rest = piece.units();
        if run.split && rest / 2 >= min_len && rest >= 2 {
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
                let (a, b) = join_to(
                    wt,
                    run.to,
                    move || adaptive(wt, mine, pos, folder, lp, run, Some(taken)),
                    move || {
                        let wt = WorkerThread::current().expect("a loop's half runs on a worker");
                        // Taken back by its owner (nobody wanted it): it
                        // runs without publishing until asked.
                        let published = if wt.index() == owner {
                            Some(&NOT_TAKEN)
                        } else {
                            taken.store(true, Ordering::Relaxed);
                            None
                        };
                        adaptive(
                            wt,
                            theirs,
                            their_pos,
                            lp.consumer.folder(),
                            lp,
                            run,
                            published,
                        )
                    },
                );
                return lp.consumer.reduce(a, b);
            }
        }
    }
    folder.complete()
}

/// One part of a placed or static loop: units from `start` (to the next
/// share's start), on `node`
/// (placed) or `worker` (static), with the placed data it covers.
struct Share {
    start: usize,
    /// Where it runs: a node place, or `None` for a gap of unplaced units.
    place: Option<Place>,
    /// The static schedule's worker.
    worker: usize,
    /// Placed data of its units (absolute unit indices).
    data: Vec<Extent>,
}

/// The extents of the first source in `layout` (its extents come first,
/// in increasing order), merged where neighbours share a node.
fn first_source(layout: &[Extent]) -> Vec<Extent> {
    let mut out: Vec<Extent> = Vec::new();
    for e in layout {
        match out.last_mut() {
            Some(last) if e.start < last.end => break,
            Some(last) if last.end == e.start && last.node == e.node => last.end = e.end,
            _ => out.push(*e),
        }
    }
    out
}

/// The placed data of units `start..end` (every source).
fn data_of(layout: &[Extent], start: usize, end: usize) -> Vec<Extent> {
    layout
        .iter()
        .filter_map(|e| {
            let (s, t) = (e.start.max(start), e.end.min(end));
            (s < t).then_some(Extent {
                start: s,
                end: t,
                ..*e
            })
        })
        .collect()
}

/// The piece's placed layout, when the pool spreads over several nodes.
fn layout_of<P: Piece>(wt: &WorkerThread, piece: &P) -> Vec<Extent> {
    let reg = wt.registry();
    let nodes = reg.topology().nodes().len();
    if nodes < 2
        || (0..nodes)
            .filter(|&n| !reg.node_workers(n).is_empty())
            .count()
            < 2
    {
        return Vec::new();
    }
    let mut layout = Vec::new();
    piece.layout(&mut layout);
    layout
}

/// The adaptive schedule, cut at node boundaries first for placed data.
fn run_adaptive<P, C>(wt: &WorkerThread, piece: P, lp: &Loop<'_, C>, options: Options) -> C::Result
where
    P: Piece,
    C: Consumer<P::Item>,
{
    let layout = layout_of(wt, &piece);
    if layout.is_empty() {
        return adaptive(wt, piece, 0, lp.consumer.folder(), lp, &Run::PLAIN, None);
    }
    let len = piece.units();
    let mut shares = Vec::new();
    let mut at = 0;
    let mut push = |start: usize, end: usize, node: Option<NodeId>| {
        let place = node.map(|n| {
            let p = Place::on_node(n);
            if options.strict {
                p.strict()
            } else {
                p
            }
        });
        shares.push(Share {
            start,
            place,
            worker: 0,
            data: data_of(&layout, start, end),
        });
    };
    for e in first_source(&layout) {
        if e.start > at {
            push(at, e.start, None);
        }
        push(e.start, e.end, Some(e.node));
        at = e.end;
    }
    if at < len {
        push(at, len, None);
    }
    let honours = wt.registry().policy().honours_places();
    let first_elsewhere = match &shares[0].place {
        Some(p) => p.node() != Some(node_id(wt)),
        None => false,
    };
    if honours && first_elsewhere {
        // Start on the first share's node; from there each share goes to
        // its own node.
        let to = To::Place(shares[0].place.as_ref().expect("placed"));
        let ((), r) = join_to(
            wt,
            to,
            || (),
            || {
                let wt = WorkerThread::current().expect("a loop's share runs on a worker");
                fork_shares(wt, piece, &shares, lp, honours)
            },
        );
        return r;
    }
    fork_shares(wt, piece, &shares, lp, honours)
}

/// Runs `shares` (which `piece` covers, from `shares[0].start`): the first
/// half here, the second sent to the node of its first share.
fn fork_shares<P, C>(
    wt: &WorkerThread,
    piece: P,
    shares: &[Share],
    lp: &Loop<'_, C>,
    honours: bool,
) -> C::Result
where
    P: Piece,
    C: Consumer<P::Item>,
{
    if let [share] = shares {
        let run = Run {
            to: share.place.as_ref().map_or(To::Deque, To::Place),
            split: true,
            node_only: honours && share.place.is_some(),
            data: &share.data,
        };
        return adaptive(wt, piece, share.start, lp.consumer.folder(), lp, &run, None);
    }
    let mid = shares.len() / 2;
    let (left, right) = piece.split_at(shares[mid].start - shares[0].start);
    let to = shares[mid].place.as_ref().map_or(To::Deque, To::Place);
    let (a, b) = join_to(
        wt,
        to,
        || fork_shares(wt, left, &shares[..mid], lp, honours),
        || {
            let wt = WorkerThread::current().expect("a loop's share runs on a worker");
            fork_shares(wt, right, &shares[mid..], lp, honours)
        },
    );
    lp.consumer.reduce(a, b)
}

/// `len` units cut into `k` near-equal contiguous parts from `start`.
fn cut(start: usize, len: usize, k: usize) -> impl Iterator<Item = (usize, usize)> {
    let at = move |i: usize| start + ((len as u128 * i as u128) / k as u128) as usize;
    (0..k).map(move |i| (at(i), at(i + 1)))
}

/// The static schedule (see [`Schedule::Static`]).
fn run_static<P, C>(wt: &WorkerThread, piece: P, lp: &Loop<'_, C>) -> C::Result
where
    P: Piece,
    C: Consumer<P::Item>,
{
    let reg = wt.registry();
    let len = piece.units();
    let min_len = lp.hints.min_len;
    let parts = |len: usize, workers: usize| (len / min_len).clamp(1, workers.max(1));
    let topo = reg.topology();
    let layout = layout_of(wt, &piece);
    let nodes = first_source(&layout);
    let covered = !nodes.is_empty()
        && nodes[0].start == 0
        && nodes.windows(2).all(|w| w[0].end == w[1].start)
        && nodes.last().is_some_and(|e| e.end == len)
        && nodes.iter().all(|e| {
            topo.node_index(e.node)
                .is_some_and(|n| !reg.node_workers(n).is_empty())
        });
    let mut shares = Vec::new();
    if covered {
        // Each node's share over that node's workers.
        for e in &nodes {
            let n = topo.node_index(e.node).expect("checked above");
            let workers = reg.node_workers(n);
            let k = parts(e.end - e.start, workers.len());
            for ((s, t), &w) in cut(e.start, e.end - e.start, k).zip(workers) {
                shares.push(Share {
                    start: s,
                    place: None,
                    worker: w,
                    data: data_of(&layout, s, t),
                });
            }
        }
    } else {
        let mut order: Vec<usize> = (0..reg.num_threads()).collect();
        order.sort_by_key(|&w| (reg.worker_node(w), w));
        let k = parts(len, order.len());
        for ((s, t), &w) in cut(0, len, k).zip(&order) {
            shares.push(Share {
                start: s,
                place: None,
                worker: w,
                data: data_of(&layout, s, t),
            });
        }
    }
    if wt.index() != shares[0].worker {
        let ((), r) = join_to(
            wt,
            To::Worker(shares[0].worker, None),
            || (),
            || {
                let wt = WorkerThread::current().expect("a static share runs on a worker");
                fork_static(wt, piece, &shares, lp)
            },
        );
        return r;
    }
    fork_static(wt, piece, &shares, lp)
}

/// Runs static `shares` from `shares[0]`'s worker (the caller): its own
/// share here, the second half sent to the worker of its first share.
fn fork_static<P, C>(wt: &WorkerThread, piece: P, shares: &[Share], lp: &Loop<'_, C>) -> C::Result
where
    P: Piece,
    C: Consumer<P::Item>,
{
    if let [share] = shares {
        let run = Run {
            to: To::Deque,
            split: false,
            node_only: false,
            data: &share.data,
        };
        return adaptive(wt, piece, share.start, lp.consumer.folder(), lp, &run, None);
    }
    let mid = shares.len() / 2;
    let (left, right) = piece.split_at(shares[mid].start - shares[0].start);
    let (a, b) = join_to(
        wt,
        To::Worker(shares[mid].worker, None),
        || fork_static(wt, left, &shares[..mid], lp),
        || {
            let wt = WorkerThread::current().expect("a static share runs on a worker");
            fork_static(wt, right, &shares[mid..], lp)
        },
    );
    lp.consumer.reduce(a, b)
}
