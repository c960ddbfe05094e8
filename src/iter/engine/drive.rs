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
//!   runs adaptively, splitting only for idle workers of its node (a
//!   share running on its node sends those pieces strictly: under
//!   `Locality` the whole share is the hint). Every
//!   batch counts its bytes, local or not, in the pool's statistics.
//! - **Static**: one contiguous share per worker, each sent to its worker
//!   ([`To::Worker`]) and run without splitting (see
//!   [`Schedule::Static`]).

use super::clock;
use super::run::{adaptive, node_id, Loop, Run, BATCH_US, FREE_NS, WAKE_AFTER_US};
use super::{Consumer, Extent, Folder, Hints, Options, Piece, Schedule};
use crate::iter::indexed_adaptors::RevPiece;
use crate::numa::NodeId;
use crate::sched::{global_registry, join_to, To, WorkerThread};
use crate::Place;

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
    if C::REVERSIBLE {
        // `find_last`: back to front (see `Consumer::reverse`).
        consumer.reverse();
        return run_forward(RevPiece::new(piece), consumer);
    }
    run_forward(piece, consumer)
}

/// [`run`], front to back.
fn run_forward<P, C>(piece: P, consumer: C) -> C::Result
where
    P: Piece,
    C: Consumer<P::Item>,
{
    let hints = piece.hints();
    // Options set on the consumer side come later in the chain: they win.
    let options = hints.options.or(consumer.options());
    let hints = Hints {
        min_len: hints.min_len.max(1),
        max_len: hints.max_len.max(1),
        options,
    };
    if WorkerThread::current().is_none() {
        // The global pool exists from the first loop on, run here or not
        // (as rayon's, whose loops ask for its thread count): a later
        // `build_global` fails, `TERROIR_REPORT` records.
        let _ = global_registry();
        if never_splits(&piece, &hints) {
            // As rayon's: a loop that cannot split runs on the calling
            // thread, without a round trip through the pool.
            return run_here(piece, &consumer, hints.min_len);
        }
    }
    in_worker(move |wt| {
        let tick = clock::ticks_per_us();
        let lp = Loop {
            consumer: &consumer,
            hints,
            started: clock::now(),
            batch_ticks: BATCH_US * tick,
            free_ticks: FREE_NS * tick / 1000,
            wake_ticks: WAKE_AFTER_US * tick,
            workers: wt.registry().num_threads(),
        };
        match options.schedule.unwrap_or_default() {
            Schedule::Static => run_static(wt, piece, &lp),
            _ => run_adaptive(wt, piece, &lp, options),
        }
    })
}

/// Whether an adaptive run of `piece` could never split (and so never
/// use another worker): fewer than two `with_min_len`s of units (after a
/// first batch of `with_min_len` units the rest is too short to halve),
/// no `with_max_len` leaves, not a static schedule, no placed data.
fn never_splits<P: Piece>(piece: &P, hints: &Hints) -> bool {
    if hints.max_len != usize::MAX
        || matches!(hints.options.schedule, Some(Schedule::Static))
        || piece.units() >= hints.min_len.saturating_mul(2)
    {
        return false;
    }
    let mut layout = Vec::new();
    piece.layout(&mut layout);
    layout.is_empty()
}

/// Runs a piece that [`never_splits`] on the calling thread, in the
/// batches an adaptive run would make: `with_min_len` units, then the
/// rest.
fn run_here<P, C>(mut piece: P, consumer: &C, min_len: usize) -> C::Result
where
    P: Piece,
    C: Consumer<P::Item>,
{
    let mut folder = consumer.folder();
    let mut pos = 0usize;
    let mut batch = min_len;
    loop {
        let left = piece.units();
        if left == 0 || folder.full() || consumer.stop(pos, pos.saturating_add(left)) {
            return folder.complete();
        }
        let n = batch.min(left);
        folder = folder.consume(pos, piece.front(n));
        pos = pos.saturating_add(n);
        batch = usize::MAX;
    }
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
        return adaptive(wt, piece, 0, lp.consumer.folder(), lp, &Run::PLAIN, None, 0);
    }
    let len = piece.units();
    let honours = wt.registry().policy().honours_places();
    let mut shares = Vec::new();
    let mut at = 0;
    let mut push = |start: usize, end: usize, node: Option<NodeId>| {
        let place = node.map(|n| {
            let p = Place::on_node(n);
            // `.strict()` changes nothing under the policies that ignore
            // places (as documented): a strict place would be honoured
            // under every policy, sending pieces to a node that the share
            // never went to (no first hop there).
            if options.strict && honours {
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
        // A share that runs on its node keeps the pieces it splits off
        // there (they are only split off for an idle worker of the node):
        // under `Locality` the share as a whole is a hint, which another
        // node may take before its node starts it, but once started its
        // rest is not for other nodes to pick apart. They go to the node's
        // own queue (`To::OwnNode`), where every worker of the node looks,
        // whatever the distribution. A share that runs elsewhere sends its
        // pieces to its node as hints.
        let to = match &share.place {
            Some(p) if honours && p.node() == Some(node_id(wt)) => To::OwnNode(p),
            Some(p) => To::Place(p),
            None => To::Deque,
        };
        let run = Run {
            to,
            split: true,
            node_only: honours && share.place.is_some(),
            data: &share.data,
        };
        return adaptive(
            wt,
            piece,
            share.start,
            lp.consumer.folder(),
            lp,
            &run,
            None,
            0,
        );
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
        return adaptive(
            wt,
            piece,
            share.start,
            lp.consumer.folder(),
            lp,
            &run,
            None,
            0,
        );
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
