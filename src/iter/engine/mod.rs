//! The inside of the loop layer: how sources, adaptors and consumers talk
//! to each other and to the driver. None of it is public (the traits are
//! `pub` only so that the public traits can name them; this module is not
//! reachable from outside the crate, which also seals
//! [`ParallelIterator`](super::ParallelIterator)).
//!
//! - A [`Piece`] is a run of *units* that can be split anywhere and
//!   consumed from either end in batches: a slice's elements, a range's
//!   integers, the items of zipped or enumerated pieces. Every indexed
//!   iterator has one (one unit = one item); unindexed adaptors (`filter`,
//!   `flat_map_iter`, …) work on the consumer side instead, so that their
//!   items still come out of the units of the piece underneath.
//! - A [`Consumer`] says what to do with the items: it makes a [`Folder`]
//!   per run of consecutive units (per piece a worker runs), which takes
//!   the items batch by batch (a `std` iterator per batch: the adaptors
//!   become `std` adaptors on it, so a batch is a plain sequential loop),
//!   and reduces the results of two neighbouring runs, left before right.
//! - Unindexed sources that can only be cut where they say (`split`, the
//!   tree walks) are [`Frontier`]s, driven by `frontier.rs` the same way.
//! - The driver (`drive.rs`) runs a piece on the pool: batch after batch
//!   on one worker, splitting off the second half of what is left only when
//!   another worker asks for work (see the module docs of
//!   [`crate::iter`]).

pub(crate) mod clock;
mod drive;
mod frontier;
mod run;

pub(crate) use drive::{in_worker, run};
pub(crate) use frontier::{run_frontier, Frontier};
pub use run::set_split_stress;

use crate::numa::NodeId;

/// A splittable run of units (see the module docs).
pub trait Piece: Send + Sized {
    /// What a unit yields.
    type Item;
    /// A batch from the front, yielding its units' items in order.
    type Seq<'s>: Iterator<Item = Self::Item>
    where
        Self: 's;
    /// A batch from the back, yielding its units' items in reverse order
    /// (for `rev`; only used on indexed pieces).
    type RevSeq<'s>: Iterator<Item = Self::Item>
    where
        Self: 's;

    /// Units left.
    fn units(&self) -> usize;
    /// The first `mid` units and the rest (`mid <= units()`). Per-run state
    /// (`map_init`'s value) stays with the first part.
    fn split_at(self, mid: usize) -> (Self, Self);
    /// Takes the first `n` units (`n <= units()`) as a batch. The units are
    /// gone from the piece even if the batch is dropped unfinished (then
    /// the batch drops what it did not yield).
    fn front(&mut self, n: usize) -> Self::Seq<'_>;
    /// Takes the last `n` units as a batch, in reverse order.
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_>;
    /// `with_min_len` / `with_max_len` bounds.
    fn hints(&self) -> Hints {
        Hints::NONE
    }
    /// Appends where the piece's units live, for placed data (unit indices
    /// relative to the piece's first unit). Nothing for unplaced data.
    fn layout(&self, out: &mut Vec<Extent>) {
        let _ = out;
    }
    /// Whether producing the items runs no user code (ranges, slices,
    /// owned vectors: a batch dropped unfinished is as good as one run to
    /// its end). `skip` runs the units it skips only when this is false
    /// (rayon runs them for the side effects of a `map` before `skip`),
    /// so that skipping most of a huge range costs nothing.
    fn pure(&self) -> bool {
        false
    }
    /// Whether [`split_at`](Piece::split_at) is cheap, exact (the first
    /// part has `mid` units) and carries no per-run state (no `map_init`
    /// value, no `map_with` clone), so that a run may cut each batch off
    /// the front and offer the rest to thieves while the batch runs (see
    /// `run.rs`). False unless a piece says so.
    fn split_cheap(&self) -> bool {
        false
    }
}

/// Bounds on the runs a loop is split into (`with_min_len`,
/// `with_max_len`), and the loop options set on an indexed iterator
/// (`schedule`, `strict`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hints {
    /// Never split off a run shorter than this.
    pub min_len: usize,
    /// Look for a split request at least every this many units.
    pub max_len: usize,
    /// Schedule and strictness.
    pub options: Options,
}

impl Hints {
    /// No bounds, no options.
    pub const NONE: Hints = Hints {
        min_len: 1,
        max_len: usize::MAX,
        options: Options {
            schedule: None,
            strict: false,
        },
    };

    /// Both sets (zips: the stricter bound of each, either's options).
    pub fn and(self, other: Hints) -> Hints {
        Hints {
            min_len: self.min_len.max(other.min_len),
            max_len: self.max_len.min(other.max_len),
            options: Options {
                schedule: self.options.schedule.or(other.options.schedule),
                strict: self.options.strict || other.options.strict,
            },
        }
    }
}

/// Units `start..end` of a piece live on `node`, `unit_bytes` bytes each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// The node.
    pub node: NodeId,
    /// First unit.
    pub start: usize,
    /// One past the last unit.
    pub end: usize,
    /// Bytes of placed data per unit.
    pub unit_bytes: usize,
}

impl Extent {
    /// The extents of `shares` (element ranges of a placed container) as
    /// seen by a piece of `units` units starting at element `base`, each
    /// unit covering `per_unit` elements of `elem_bytes` bytes.
    pub(crate) fn clip(
        shares: &[(NodeId, std::ops::Range<usize>)],
        base: usize,
        units: usize,
        elem_bytes: usize,
        out: &mut Vec<Extent>,
    ) {
        let end = base.saturating_add(units);
        for (node, r) in shares {
            let (s, e) = (r.start.max(base), r.end.min(end));
            if s < e {
                out.push(Extent {
                    node: *node,
                    start: s - base,
                    end: e - base,
                    unit_bytes: elem_bytes,
                });
            }
        }
    }
}

/// How a loop is scheduled on the workers.
///
/// ```
/// use terroir::prelude::*;
/// use terroir::iter::Schedule;
/// let mut v = vec![0u32; 10_000];
/// // Each worker writes the same contiguous share of `v` every time.
/// v.par_iter_mut().schedule(Schedule::Static).for_each(|x| *x += 1);
/// assert!(v.iter().all(|&x| x == 1));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Schedule {
    /// Run in order on one worker and split off half of what is left only
    /// when another worker asks for work (the default).
    #[default]
    Adaptive,
    /// OpenMP's `schedule(static)`: the units are cut into one contiguous
    /// share per worker (workers ordered by node, then index; fewer shares
    /// when `with_min_len` asks for longer ones), and worker `k` always
    /// runs share `k`, whatever the pool's policy, without splitting it
    /// further. A loop over a placed container cuts at its node shares
    /// first and gives each node's share to that node's workers. A first
    /// touch through a static loop and later static loops over the same
    /// length touch the same pages from the same workers. Because share
    /// `k` is worker `k`'s alone, the loop waits for a worker that is
    /// blocked outside the pool (a thread made a worker by
    /// [`use_current_thread`](crate::ThreadPoolBuilder::use_current_thread)
    /// and waiting on a channel, say) until it comes back.
    Static,
}

/// Options a loop's consumer carries down to the driver
/// ([`schedule`](super::ParallelIterator::schedule),
/// [`strict`](super::ParallelIterator::strict)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The schedule, if one was asked for.
    pub schedule: Option<Schedule>,
    /// Whether node shares must run on their node (whatever the policy
    /// says about hints).
    pub strict: bool,
}

impl Options {
    /// These options where set, `outer`'s where not.
    pub fn or(self, outer: Options) -> Options {
        Options {
            schedule: outer.schedule.or(self.schedule),
            strict: self.strict || outer.strict,
        }
    }
}

/// What a loop does with its items (see the module docs).
pub trait Consumer<T>: Send + Sync + Sized {
    /// Folds one run of units.
    type Folder: Folder<T, Result = Self::Result>;
    /// The result of a run, and of the loop.
    type Result: Send;
    /// A folder for a new run.
    fn folder(&self) -> Self::Folder;
    /// The result of two neighbouring runs, `left` before `right`.
    fn reduce(&self, left: Self::Result, right: Self::Result) -> Self::Result;
    /// Whether units `start..end` need not run at all (a search found what
    /// it looks for: everywhere for `find_any`, before `start` for
    /// `find_first`).
    fn stop(&self, start: usize, end: usize) -> bool;
    /// The loop options set by adaptors.
    fn options(&self) -> Options;
    /// Whether results are wanted as early as possible (searches): without
    /// `with_min_len`/`with_max_len`, each batch then gets a folder of its
    /// own, so that a `fold` in front of a search yields after every batch
    /// (not once per run) and the search can stop the loop early.
    fn eager(&self) -> bool;
    /// Whether `result` (of the units so far, in order) cannot change
    /// with more units after them: a search that found what it looks for.
    /// A `flat_map` stops feeding inner loops after such a result.
    fn done(&self, result: &Self::Result) -> bool;
    /// Whether the loop should run back to front (`find_last`: the last
    /// match is found first, so a search in a huge range ends as soon as
    /// rayon's does). An adaptor says what its base says if its result
    /// does not depend on the order in which the items come (per item:
    /// `map`, `filter`, …), else no (the default).
    const REVERSIBLE: bool = false;
    /// Called once by the driver, before it runs a loop whose consumer is
    /// [`REVERSIBLE`](Self::REVERSIBLE) back to front: from then on,
    /// batches yield their items last first and positions (`stop`,
    /// `Folder::consume`) count units from the back. Adaptors pass it on.
    fn reverse(&self) {}
}

/// Folds one run of units, batch by batch.
pub trait Folder<T>: Sized {
    /// See [`Consumer::Result`].
    type Result;
    /// Takes a batch: the items of the units starting at unit `start`.
    fn consume<I: Iterator<Item = T>>(self, start: usize, items: I) -> Self;
    /// Whether this folder wants no more items.
    fn full(&self) -> bool {
        false
    }
    /// The run's result.
    fn complete(self) -> Self::Result;
}

/// A consumer that passes everything but its folders through to `base`.
macro_rules! forward_consumer {
    () => {
        fn reduce(&self, left: Self::Result, right: Self::Result) -> Self::Result {
            self.base.reduce(left, right)
        }
        fn stop(&self, start: usize, end: usize) -> bool {
            self.base.stop(start, end)
        }
        fn options(&self) -> $crate::iter::engine::Options {
            self.base.options()
        }
        fn eager(&self) -> bool {
            self.base.eager()
        }
        fn done(&self, result: &Self::Result) -> bool {
            self.base.done(result)
        }
    };
}
pub(crate) use forward_consumer;

/// The [`Consumer::REVERSIBLE`] items of an adaptor whose result does not
/// depend on the order of the items (`base`, a `$c: Consumer<$t>`, is
/// its consumer).
macro_rules! forward_reverse {
    ($c:ty, $t:ty) => {
        const REVERSIBLE: bool = <$c as $crate::iter::engine::Consumer<$t>>::REVERSIBLE;
        fn reverse(&self) {
            self.base.reverse()
        }
    };
}
pub(crate) use forward_reverse;

/// Pointers that loop pieces hand between workers: each piece writes its
/// own disjoint part.
#[derive(Debug)]
pub(crate) struct SendPtr<T>(pub(crate) *mut T);

impl<T> Clone for SendPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SendPtr<T> {}
// SAFETY: used only for disjoint element ranges of a buffer of `T: Send`
// values, each written or read by one piece (the users say which).
unsafe impl<T: Send> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SendPtr<T> {}

/// A piece that wraps `self.base` unit for unit: forwards `units`, `hints`
/// and `layout`.
macro_rules! forward_piece {
    (cheap) => {
        $crate::iter::engine::forward_piece!();
        fn split_cheap(&self) -> bool {
            self.base.split_cheap()
        }
    };
    () => {
        fn units(&self) -> usize {
            self.base.units()
        }
        fn hints(&self) -> $crate::iter::engine::Hints {
            self.base.hints()
        }
        fn layout(&self, out: &mut Vec<$crate::iter::engine::Extent>) {
            self.base.layout(out)
        }
    };
}
pub(crate) use forward_piece;
