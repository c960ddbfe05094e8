//! The driver of unindexed sources that can only be cut where they say:
//! [`split`](crate::iter::split) (the user's splitter) and the tree walks
//! ([`walk_tree_prefix`](crate::iter::walk_tree_prefix), …). Such a
//! source is a [`Frontier`]: it yields its items in order, and can cut
//! off a part of what is left that comes after everything it keeps.
//!
//! A run takes items in batches (timed as a piece's, see `run.rs`) and
//! between batches cuts off a part for another worker when one asks (the
//! steal request of `join`), as a piece's run does. A source whose items
//! cannot be cut once yielded (`split`'s data) also splits *eagerly*, with
//! rayon's rule: about as many times as there are workers, and again as
//! many for a part that another worker took.
//!
//! Positions: a run's items all take the run's first position; a cut
//! gives the part cut off the middle of the run's position range, so
//! positions never decrease along the items, and searches (`find_first`,
//! `find_last`) skip runs after (or before) a match.

use super::clock;
use super::drive::in_worker;
use super::run::{next_batch, stressed, Nested, BATCH_US, FREE_NS, STRESS_DEPTH, WAKE_AFTER_US};
use super::{Consumer, Folder};
use crate::sched::{join_to, To, WorkerThread};

/// An unindexed source consumed in order, cut only where it can be (see
/// the module docs).
pub trait Frontier: Send + Sized {
    /// The items.
    type Item;
    /// The next item, in order.
    fn next(&mut self) -> Option<Self::Item>;
    /// Whether no item is left.
    fn is_empty(&self) -> bool;
    /// Cuts off a part of what is left, all of whose items come after
    /// those `self` keeps; `None` if it cannot. Both parts should keep
    /// items where that is cheap to know; a part may turn out to have none
    /// (a string's part with only separators left), and then its `next`
    /// says `None` and `is_empty` becomes true.
    fn split_off(&mut self) -> Option<Self>;
    /// Gives `folder` the next `n` items (fewer if fewer are left), all at
    /// position `pos`. A source whose items come cheaper in bulk (a walk
    /// that can recurse) overrides it.
    fn consume_batch<F: Folder<Self::Item>>(&mut self, folder: F, pos: usize, n: usize) -> F {
        folder.consume(pos, std::iter::from_fn(|| self.next()).take(n))
    }
}

/// Nested cuts of one thread's stack beyond which a run stops cutting
/// (each cut nests the rest of the run in a `join`).
const MAX_DEPTH: u32 = 48;

/// What every run of one loop shares.
struct Walk<'c, C> {
    consumer: &'c C,
    /// Unasked cuts a part starts with (0: only when asked).
    eager: usize,
    started: u64,
    batch_ticks: u64,
    free_ticks: u64,
    wake_ticks: u64,
}

/// Runs `frontier` with `consumer` on the current pool; `eager`: whether
/// to cut without being asked (rayon's rule, for sources whose items
/// cannot be cut once yielded).
pub(crate) fn run_frontier<F, C>(frontier: F, consumer: C, eager: bool) -> C::Result
where
    F: Frontier,
    C: Consumer<F::Item>,
{
    if frontier.is_empty() {
        return consumer.folder().complete();
    }
    in_worker(move |wt| {
        let tick = clock::ticks_per_us();
        let walk = Walk {
            consumer: &consumer,
            eager: if eager {
                wt.registry().num_threads()
            } else {
                0
            },
            started: clock::now(),
            batch_ticks: BATCH_US * tick,
            free_ticks: FREE_NS * tick / 1000,
            wake_ticks: WAKE_AFTER_US * tick,
        };
        run(
            wt,
            frontier,
            consumer.folder(),
            &walk,
            walk.eager,
            0,
            usize::MAX,
        )
    })
}

/// One run: `fr` into `folder` on `wt`, its items at position `pos`
/// (`end`: where the next part's positions start), with `budget` unasked
/// cuts left.
fn run<F, C>(
    wt: &WorkerThread,
    mut fr: F,
    folder: C::Folder,
    walk: &Walk<'_, C>,
    mut budget: usize,
    pos: usize,
    end: usize,
) -> C::Result
where
    F: Frontier,
    C: Consumer<F::Item>,
{
    let c = walk.consumer;
    let (_nested, depth) = Nested::enter();
    // Searches get a folder per batch (see `Consumer::eager`).
    let per_batch = c.eager();
    let mut done: Option<C::Result> = None;
    let mut folder = Some(folder);
    let mut batch = 1;
    let mut t = clock::now();
    loop {
        let f = folder.as_ref().expect("a folder");
        if fr.is_empty() || f.full() || c.stop(pos, end) {
            break;
        }
        let long = t.saturating_sub(walk.started) >= walk.wake_ticks;
        let cut = if stressed() {
            depth < STRESS_DEPTH
        } else {
            depth < MAX_DEPTH && (budget > 0 || wt.split_wanted(long))
        };
        if cut {
            if let Some(theirs) = fr.split_off() {
                budget /= 2;
                let mid = pos + (end - pos) / 2;
                let owner = wt.index();
                let f = folder.take().expect("a folder");
                let (a, b) = join_to(
                    wt,
                    To::Deque,
                    move || run(wt, fr, f, walk, budget, pos, mid),
                    move || {
                        let wt = WorkerThread::current().expect("a part runs on a worker");
                        // Taken by another worker: a fresh budget, as rayon.
                        let budget = if wt.index() == owner {
                            budget
                        } else {
                            budget.max(walk.eager)
                        };
                        run(wt, theirs, c.folder(), walk, budget, mid, end)
                    },
                );
                let r = c.reduce(a, b);
                return match done {
                    Some(d) => c.reduce(d, r),
                    None => r,
                };
            }
        }
        let f = folder.take().expect("a folder");
        folder = Some(fr.consume_batch(f, pos, batch));
        if per_batch {
            let r = folder.take().expect("a folder").complete();
            done = Some(match done {
                Some(d) => c.reduce(d, r),
                None => r,
            });
            folder = Some(c.folder());
        }
        let now = clock::now();
        batch = next_batch(
            batch,
            now.saturating_sub(t),
            walk.batch_ticks,
            walk.free_ticks,
        );
        t = now;
    }
    let last = folder.take().expect("a folder").complete();
    match done {
        Some(d) => c.reduce(d, last),
        None => last,
    }
}
